"""Hop marks are taken only when REPLOG_HOP_MARKS_DIR names a directory (bench/produce.py --hops)."""

from __future__ import annotations

import importlib
import os

import pytest

from replog.common import hopmarks


@pytest.fixture
def fresh_hopmarks(monkeypatch):
    """The module as a new process sees it; left disabled again afterwards, for the other tests."""

    def load(directory=None):
        if directory is None:
            monkeypatch.delenv(hopmarks.ENV, raising=False)
        else:
            monkeypatch.setenv(hopmarks.ENV, str(directory))
        return importlib.reload(hopmarks)

    yield load
    monkeypatch.delenv(hopmarks.ENV, raising=False)
    importlib.reload(hopmarks)


def test_without_the_variable_marks_write_nothing(fresh_hopmarks, tmp_path):
    marks = fresh_hopmarks()
    marks.mark("L1")
    marks.mark("L3", 2)
    marks.flush()
    assert list(tmp_path.iterdir()) == []


def test_with_the_variable_each_mark_is_a_line_in_order(fresh_hopmarks, tmp_path):
    marks = fresh_hopmarks(tmp_path)
    marks.mark("L1")
    marks.mark("L3", 2)
    marks.flush()
    lines = (tmp_path / f"{os.getpid()}.marks").read_text(encoding="ascii").splitlines()
    assert [line.split()[1:] for line in lines] == [["L1", "-1"], ["L3", "2"]]
    first, second = (int(line.split()[0]) for line in lines)
    assert first <= second


def test_marks_are_written_in_batches_without_a_flush(fresh_hopmarks, tmp_path):
    marks = fresh_hopmarks(tmp_path)
    for _ in range(marks.MARKS_PER_WRITE):
        marks.mark("P1")
    lines = (tmp_path / f"{os.getpid()}.marks").read_text(encoding="ascii").splitlines()
    assert len(lines) == marks.MARKS_PER_WRITE
