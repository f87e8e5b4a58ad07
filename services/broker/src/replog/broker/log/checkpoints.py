"""Checkpoint files: small text files replaced atomically (docs/architecture.md, "Storage").

Theory of operation
-------------------
A checkpoint is rewritten whole, never edited in place: write `<name>.tmp`,
fsync it, rename it over `<name>`, fsync the directory. A crash leaves either
the old file or the new one, never a mix; a leftover `.tmp` is garbage.

Format (text, one entry per line, fields separated by one space)::

    1                  <- format version
    2                  <- number of entries
    orders 0 1200
    orders 1 998
    crc32c 8fe58fb9    <- CRC-32C of every byte above this line, 8 hex digits

The checksum line is what makes bit rot in a checkpoint visible: without it a
flipped bit in a digit reads as another offset. Version 0 (the same without the
checksum line, as brokers before it wrote) is still read.

Offsets checkpoints (the broker-wide `replication-offset-checkpoint` of high
watermarks, `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint`,
Kafka's file of the same name: where each log starts, which may be inside its
first segment after DeleteRecords) have entries
`topic partition offset`. The leader-epoch checkpoint of one partition
(`leader-epoch-checkpoint`) has entries `leader_epoch start_offset`.

A missing file reads as empty. A malformed one, or one whose checksum does not
match, raises `CheckpointError` naming the file and the line: a broker must not
start on a silently misread high watermark.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from crc32c import crc32c

CHECKPOINT_VERSION = 1  # written; version 0 (no checksum line) is still read
UNCHECKED_VERSION = 0
CHECKSUM_TAG = "crc32c"
TEMP_SUFFIX = ".tmp"

HW_CHECKPOINT_FILE = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be parsed."""


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def create_marker_file(path: Path) -> None:
    """Create the empty file `path` (a marker whose existence is the fact) and make it durable."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(path.parent)


def write_checkpoint(path: Path, entries: Sequence[Sequence[object]], *, durable: bool = True) -> None:
    """Atomically replace `path` with a versioned checkpoint of `entries` (rows of fields).

    `durable=False` skips the fsyncs: the rename is still atomic for readers,
    but a crash may leave the old file (or, on some file systems, an empty one).
    """
    path = Path(path)
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    for fields in entries:
        texts = [str(field) for field in fields]
        line = " ".join(texts)
        if line.split() != texts:  # one C-level check per row (a broker writes 10K+ rows every few seconds)
            bad = next(text for text in texts if not text or text.split() != [text])
            raise ValueError(f"checkpoint field {bad!r} is empty or contains whitespace")
        lines.append(line)
    body = ("\n".join(lines) + "\n").encode()
    data = body + f"{CHECKSUM_TAG} {crc32c(body):08x}\n".encode()
    temp_path = path.with_name(path.name + TEMP_SUFFIX)
    fd = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp_path, path)
    if durable:
        fsync_directory(path.parent)


def read_checkpoint(path: Path, fields_per_entry: int) -> list[list[str]]:
    """The entries of the checkpoint at `path` as rows of strings; [] if it does not exist."""
    path = Path(path)
    try:
        data = path.read_bytes()
        text = data.decode()
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as exc:  # bit rot in a text file
        raise CheckpointError(f"{path}: not text: {exc}") from exc
    lines = text.splitlines()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: {len(lines)} lines, a checkpoint has at least a version and a count")
    if lines[0] == str(CHECKPOINT_VERSION):
        lines = _checked(path, data, lines)
    elif lines[0] != str(UNCHECKED_VERSION):
        raise CheckpointError(f"{path}: line 1: unsupported version {lines[0]!r}, expected {CHECKPOINT_VERSION} "
                              f"(or {UNCHECKED_VERSION})")
    count = _parse_int(path, 2, lines[1])
    body = lines[2:]
    if count != len(body):
        raise CheckpointError(f"{path}: line 2: count says {count} entries, the file has {len(body)}")
    rows = []
    for line_number, line in enumerate(body, start=3):
        fields = line.split(" ")
        if len(fields) != fields_per_entry or not all(fields):
            raise CheckpointError(
                f"{path}: line {line_number}: expected {fields_per_entry} space-separated fields, got {line!r}"
            )
        rows.append(fields)
    return rows


def _checked(path: Path, data: bytes, lines: list[str]) -> list[str]:
    """`lines` less the checksum line, once it matches the bytes above it."""
    tag, _, digest = lines[-1].partition(" ")
    if len(lines) < 3 or tag != CHECKSUM_TAG or not data.endswith(b"\n"):
        raise CheckpointError(f"{path}: line {len(lines)}: expected the closing '{CHECKSUM_TAG} <hex>' line, got "
                              f"{lines[-1][:40]!r} (a cut file?)")
    body = data[:data.rindex(b"\n", 0, len(data) - 1) + 1]
    if digest != f"{crc32c(body):08x}":
        raise CheckpointError(f"{path}: the checksum {digest[:16]!r} does not match the file's contents "
                              f"({crc32c(body):08x}): the file is damaged")
    return lines[:-1]


def _parse_int(path: Path, line_number: int, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CheckpointError(f"{path}: line {line_number}: {text!r} is not an integer") from None


def write_offsets_checkpoint(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    """Atomically write `{(topic, partition): offset}` (sorted, so files diff cleanly)."""
    rows = [(topic, partition, offset) for (topic, partition), offset in sorted(offsets.items())]
    write_checkpoint(path, rows)


def read_offsets_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """`{(topic, partition): offset}` from `path`; {} if the file does not exist."""
    offsets: dict[tuple[str, int], int] = {}
    for line_number, (topic, partition_text, offset_text) in enumerate(read_checkpoint(path, 3), start=3):
        key = (topic, _parse_int(path, line_number, partition_text))
        if key in offsets:
            raise CheckpointError(f"{path}: line {line_number}: {topic} {key[1]} appears twice")
        offsets[key] = _parse_int(path, line_number, offset_text)
    return offsets


def write_leader_epoch_checkpoint(path: Path, entries: Iterable[tuple[int, int]], *, durable: bool = True) -> None:
    """Atomically write the (leader_epoch, start_offset) entries of one partition."""
    write_checkpoint(path, list(entries), durable=durable)


def read_leader_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """(leader_epoch, start_offset) entries, both strictly increasing; [] if no file."""
    entries: list[tuple[int, int]] = []
    for line_number, (epoch_text, offset_text) in enumerate(read_checkpoint(path, 2), start=3):
        leader_epoch = _parse_int(path, line_number, epoch_text)
        start_offset = _parse_int(path, line_number, offset_text)
        if leader_epoch < 0 or start_offset < 0:
            raise CheckpointError(f"{path}: line {line_number}: negative leader epoch or start offset")
        if entries and (leader_epoch <= entries[-1][0] or start_offset <= entries[-1][1]):
            raise CheckpointError(
                f"{path}: line {line_number}: entry ({leader_epoch}, {start_offset}) does not follow "
                f"{entries[-1]} in increasing order"
            )
        entries.append((leader_epoch, start_offset))
    return entries
