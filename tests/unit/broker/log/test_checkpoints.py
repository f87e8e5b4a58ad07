"""Checkpoint files: round trips, atomic replacement, clear errors on malformed or damaged files."""

from __future__ import annotations

import os

import pytest
from crc32c import crc32c

from replog.broker.log import CheckpointError, checkpoints, read_offsets_checkpoint, write_offsets_checkpoint
from replog.broker.log.checkpoints import read_leader_epoch_checkpoint, write_leader_epoch_checkpoint


def test_offsets_round_trip_in_a_versioned_text_format(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    offsets = {("orders", 1): 998, ("orders", 0): 1200, ("audit.log", 3): 0}
    write_offsets_checkpoint(path, offsets)
    assert read_offsets_checkpoint(path) == offsets
    body = "1\n3\naudit.log 3 0\norders 0 1200\norders 1 998\n"
    assert path.read_text() == f"{body}crc32c {crc32c(body.encode()):08x}\n"


def test_a_version_0_file_without_a_checksum_is_still_read(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text("0\n2\norders 0 1200\norders 1 998\n")
    assert read_offsets_checkpoint(path) == {("orders", 0): 1200, ("orders", 1): 998}


def test_every_single_bit_flip_of_a_checkpoint_is_refused_not_misread(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    write_offsets_checkpoint(path, {("orders", 0): 1200, ("orders", 1): 998})
    good = path.read_bytes()
    for bit in range(len(good) * 8):
        damaged = bytearray(good)
        damaged[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(damaged))
        with pytest.raises(CheckpointError):
            read_offsets_checkpoint(path)


def test_a_checkpoint_cut_short_is_refused(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, [(0, 0), (3, 120)])
    good = path.read_bytes()
    for length in range(len(good)):
        path.write_bytes(good[:length])
        with pytest.raises(CheckpointError):
            read_leader_epoch_checkpoint(path)


def test_missing_file_reads_as_empty(tmp_path):
    assert read_offsets_checkpoint(tmp_path / "nope") == {}
    assert read_leader_epoch_checkpoint(tmp_path / "nope") == []


def test_empty_checkpoint(tmp_path):
    path = tmp_path / "cp"
    write_offsets_checkpoint(path, {})
    assert read_offsets_checkpoint(path) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "at least a version and a count"),
        ("2\n0\n", "line 1: unsupported version"),
        ("1\n0\n", "expected the closing 'crc32c <hex>' line"),
        ("1\n0\ncrc32c 00000000\n", "does not match the file's contents"),
        ("0\nx\n", "line 2: 'x' is not an integer"),
        ("0\n2\norders 0 5\n", "line 2: count says 2 entries, the file has 1"),
        ("0\n1\norders 0\n", "line 3: expected 3 space-separated fields"),
        ("0\n2\norders 0 5\norders 1 five\n", "line 4: 'five' is not an integer"),
        ("0\n2\norders 0 5\norders 0 6\n", "line 4: orders 0 appears twice"),
    ],
)
def test_malformed_file_names_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError) as error:
        read_offsets_checkpoint(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_leader_epoch_entries_round_trip_and_must_increase(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, [(0, 0), (3, 120)])
    assert read_leader_epoch_checkpoint(path) == [(0, 0), (3, 120)]
    path.write_text("0\n2\n3 120\n2 130\n")
    with pytest.raises(CheckpointError, match="line 4: .* increasing order"):
        read_leader_epoch_checkpoint(path)


def test_fields_with_whitespace_are_refused(tmp_path):
    with pytest.raises(ValueError, match="whitespace"):
        write_offsets_checkpoint(tmp_path / "cp", {("bad topic", 0): 1})


def test_write_is_atomic_temp_fsync_rename_fsync_dir(tmp_path, monkeypatch):
    path = tmp_path / "replication-offset-checkpoint"
    write_offsets_checkpoint(path, {("orders", 0): 1})
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(checkpoints.os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(checkpoints.os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    write_offsets_checkpoint(path, {("orders", 0): 2})
    assert calls == ["fsync", "replace", "fsync"]  # the file, the rename, the directory
    assert read_offsets_checkpoint(path) == {("orders", 0): 2}
    assert not (tmp_path / "replication-offset-checkpoint.tmp").exists()


def test_a_crash_before_the_rename_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "replication-offset-checkpoint"
    write_offsets_checkpoint(path, {("orders", 0): 1})

    def crash(*_args):
        raise OSError("power cut")

    monkeypatch.setattr(checkpoints.os, "replace", crash)
    with pytest.raises(OSError):
        write_offsets_checkpoint(path, {("orders", 0): 2})
    assert read_offsets_checkpoint(path) == {("orders", 0): 1}
