"""The power-loss filesystem's journal (tests/fault/powerloss/journal.py), against a model file.

Whatever writes, truncations and fsyncs a file sees, a power loss gives back exactly
what it held at its last fsync; a file created and never synced disappears.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.fault.powerloss.journal import Journal

PATH = "/d/segment.log"

operations = st.lists(st.one_of(
    st.tuples(st.just("write"), st.integers(0, 64), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("truncate"), st.integers(0, 80)),
    st.tuples(st.just("fsync")),
), max_size=30)


def run(journal: Journal, content: bytearray, ops) -> bytes:
    """Apply `ops` to `content` through the journal; returns what the file held at its last fsync."""
    durable = bytes(content)

    def read_at(offset: int, length: int) -> bytes:
        return bytes(content[offset:offset + length])

    for op in ops:
        if op[0] == "write":
            _, offset, data = op
            journal.before_write(PATH, len(content), offset, len(data), read_at)
            if offset > len(content):
                content.extend(b"\0" * (offset - len(content)))
            content[offset:offset + len(data)] = data
        elif op[0] == "truncate":
            journal.before_truncate(PATH, len(content), op[1], read_at)
            del content[op[1]:]
            content.extend(b"\0" * (op[1] - len(content)))
        else:
            journal.file_synced(PATH)
            durable = bytes(content)
    return durable


def power_loss(journal: Journal, content: bytearray) -> bytearray | None:
    for restore in journal.power_loss():
        if restore.remove:
            return None
        for offset, data in restore.writes:
            if offset > len(content):
                content.extend(b"\0" * (offset - len(content)))
            content[offset:offset + len(data)] = data
        del content[restore.size:]
    return content


@given(initial=st.binary(max_size=48), ops=operations)
def test_a_power_loss_gives_back_the_content_of_the_last_fsync(initial, ops):
    journal = Journal()
    content = bytearray(initial)
    durable = run(journal, content, ops)
    assert power_loss(journal, content) == bytearray(durable)


@given(ops=operations)
def test_a_new_file_survives_only_once_it_or_its_directory_was_synced(ops):
    journal = Journal()
    journal.created(PATH)
    content = bytearray()
    synced = any(op[0] == "fsync" for op in ops)
    durable = run(journal, content, ops)
    after = power_loss(journal, content)
    assert (after is None) == (not synced)
    if synced:
        assert after == bytearray(durable)


def test_a_directory_fsync_keeps_the_name_of_a_new_file_but_not_its_data():
    journal = Journal()
    journal.created(PATH)
    journal.before_write(PATH, 0, 0, 3, lambda offset, length: b"")
    journal.directory_synced("/d")
    (restore,) = journal.power_loss()
    assert not restore.remove and restore.size == 0


def test_a_rename_moves_what_is_pending_and_replaces_the_target():
    journal = Journal()
    journal.created("/d/x.tmp")
    journal.before_write("/d/x", 5, 0, 1, lambda offset, length: b"a")  # the old target, changed
    journal.renamed("/d/x.tmp", "/d/x")
    (restore,) = journal.power_loss()
    assert restore.path == "/d/x" and restore.remove
