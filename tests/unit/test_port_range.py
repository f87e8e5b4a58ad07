"""REPLOG_PORT_RANGE keeps a process's planned ports inside the range it is given, and a bad range is refused by name."""

from __future__ import annotations

import pytest

from replog.devcluster import ports


def test_planned_ports_stay_inside_the_given_range(monkeypatch):
    monkeypatch.setenv("REPLOG_PORT_RANGE", "23000-23200")
    chosen = [ports.free_port() for _ in range(50)]
    assert all(23000 <= port < 23200 for port in chosen)
    assert len(set(chosen)) == len(chosen), "a port was handed out twice"


@pytest.mark.parametrize("spec", ["23000", "23000-22000", "80-1000", "23000-23050", "a-b"])
def test_a_range_that_cannot_be_used_is_refused_by_name(monkeypatch, spec):
    monkeypatch.setenv("REPLOG_PORT_RANGE", spec)
    with pytest.raises(ValueError, match="REPLOG_PORT_RANGE"):
        ports.free_port()
