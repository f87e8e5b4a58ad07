"""The descriptor budget (log/descriptors.py) and the offset index that holds no descriptor.

Logs here stand for hosted replicas: each has an owner's lock, held around every call as
HostedPartition.run does, and registers with one budget.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path

from replog.broker.log import LogConfig, PartitionLog
from replog.broker.log.descriptors import DescriptorBudget, budget_for_limit
from replog.broker.log.offset_index import ENTRY_SIZE, OffsetIndex
from replog.common.clock import ManualClock
from replog.common.records import decode_records, encode_batch

from .conftest import make_batch


class Owned:
    """A log with its owner's lock, registered with `budget`."""

    def __init__(self, directory: Path, budget: DescriptorBudget, **config) -> None:
        self.lock = threading.Lock()
        self.log = PartitionLog.open(directory, LogConfig(**config), ManualClock())
        self.log.track_descriptors(budget.register(self.lock, self.log.release_descriptors))

    def append(self, value_bytes: int = 10) -> None:
        with self.lock:
            self.log.append_as_leader(make_batch(1, value_bytes), 0)

    def held(self) -> int:
        with self.lock:
            return sum(1 for segment in self.log._segments if segment.holds_descriptor)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_budget_leaves_headroom_below_the_open_files_limit():
    assert budget_for_limit(20_000) == 15_000
    assert budget_for_limit(1024) == 768
    assert budget_for_limit(100) == 16  # never none at all


def test_past_the_budget_the_least_recently_used_logs_give_their_descriptors_back(tmp_path):
    budget = DescriptorBudget(8)
    logs = [Owned(tmp_path / f"t-{i}", budget) for i in range(12)]
    before = open_fds()
    for owned in logs:
        owned.append()
        assert budget.open_count <= 8
    assert open_fds() - before == budget.open_count  # the count is what the process really holds
    assert [owned.held() for owned in logs[-budget.open_count:]] == [1] * budget.open_count  # the newest
    assert all(owned.held() == 0 for owned in logs[:4])  # the oldest gave theirs back
    assert budget.logs_released >= 4
    for owned in logs:  # a log whose descriptor was closed reopens it and keeps every record
        owned.append()
    for owned in logs:
        with owned.lock:
            assert len(list(decode_records(owned.log.read(0, 1 << 20)))) == 2
            owned.log.close()
    assert budget.open_count == 0


def test_a_log_in_use_by_its_owner_is_never_closed_under_it(tmp_path):
    budget = DescriptorBudget(4)
    busy, *idle = [Owned(tmp_path / f"t-{i}", budget) for i in range(6)]
    busy.append()  # the least recently used of all
    for owned in idle[:3]:
        owned.append()
    with busy.lock:  # its owner is in the middle of a call: the budget must pass it over
        assert budget.open_count == 4
        idle[3].append()
        assert sum(1 for s in busy.log._segments if s.holds_descriptor) == 1
        assert budget.busy_skipped >= 1
    assert budget.open_count <= 4


def test_the_log_that_opens_is_never_its_own_victim(tmp_path):
    budget = DescriptorBudget(1)
    first, second = Owned(tmp_path / "a", budget), Owned(tmp_path / "b", budget)
    first.append()
    second.append()
    assert (first.held(), second.held()) == (0, 1)
    second.append()
    assert second.held() == 1


def test_the_offset_index_is_written_at_flush_and_holds_no_descriptor(tmp_path):
    budget = DescriptorBudget(100)
    owned = Owned(tmp_path / "t", budget, index_interval_bytes=1)
    for _ in range(5):
        owned.append()
    segment = owned.log._segments[-1]
    index_path = segment.index_path
    assert len(segment.index) == 4 and index_path.stat().st_size == 0  # in memory only so far
    assert owned.held() == 1 and budget.open_count == 1  # the segment's descriptor, none for the index
    with owned.lock:
        owned.log.flush()
    assert index_path.stat().st_size == 4 * ENTRY_SIZE and owned.held() == 0
    loaded = OffsetIndex.load(index_path, segment.base_offset)
    assert loaded is not None and loaded.entries() == segment.index.entries()


def test_a_truncation_drops_pending_and_written_index_entries_alike(tmp_path):
    owned = Owned(tmp_path / "t", DescriptorBudget(100), index_interval_bytes=1)
    for _ in range(4):
        owned.append()
    with owned.lock:
        owned.log.flush()
    for _ in range(4):
        owned.append()
    with owned.lock:
        owned.log.truncate_to(2)
        owned.log.flush()
    segment = owned.log._segments[-1]
    assert segment.index.entries()[-1][0] < 2
    loaded = OffsetIndex.load(segment.index_path, segment.base_offset)
    assert loaded is not None and loaded.entries() == segment.index.entries()


@contextmanager
def out_of_descriptors(directory: Path):
    """`os.open` of any file under `directory` fails with EMFILE, as at the process's limit."""
    real_open = os.open

    def refusing_open(path, flags, mode=0o777, *, dir_fd=None):
        if str(path).startswith(str(directory)):
            raise OSError(24, "Too many open files", str(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    os.open = refusing_open
    try:
        yield
    finally:
        os.open = real_open


def refused_append(owned: Owned, value_bytes: int) -> None:
    with owned.lock:
        end, segment_count = owned.log.log_end_offset, owned.log.segment_count
        try:
            owned.log.append_as_leader(make_batch(1, value_bytes), 0)
        except OSError as exc:
            assert exc.errno == 24
        else:
            raise AssertionError("the append went through without a descriptor")
        assert (owned.log.log_end_offset, owned.log.segment_count) == (end, segment_count)


def test_an_append_or_a_roll_that_cannot_open_a_file_changes_nothing(tmp_path):
    owned = Owned(tmp_path / "t", DescriptorBudget(100), segment_bytes=300, fsync_on_roll=False)
    owned.append()
    with owned.lock:
        owned.log.release_descriptors()
    with out_of_descriptors(tmp_path):
        refused_append(owned, 10)  # the segment's descriptor cannot be opened again
    owned.append()
    with out_of_descriptors(tmp_path):
        refused_append(owned, 250)  # it needs a new segment, which cannot be created
        refused_append(owned, 250)  # twice: a roll tried again is as safe as the first
    owned.append(250)  # with descriptors again the same append goes through, in a new segment
    with owned.lock:
        assert owned.log.segment_count == 2
        _, pending = owned.log.rolled_segments_to_sync()
        for fd, _ in pending:
            os.close(fd)
        assert len(pending) == 1  # the old segment, listed once
        assert [r.offset for r in decode_records(owned.log.read(0, 1 << 20))] == [0, 1, 2]
        owned.log.close()


def test_threads_writing_many_logs_past_a_small_budget_each_read_back_only_their_own_records(tmp_path):
    """Descriptors closed under a writer would be reused by another log's open, and records would land
    in the wrong file; every log reading back exactly its own records shows none was."""
    budget = DescriptorBudget(6)
    logs = [Owned(tmp_path / f"t-{i}", budget, segment_bytes=300) for i in range(24)]
    errors: list[BaseException] = []

    def write(mine: list[int]) -> None:
        try:
            for round_ in range(15):
                for i in mine:
                    with logs[i].lock:
                        batch = encode_batch([(None, b"%d-%d" % (i, round_), 0)])
                        logs[i].log.append_as_leader(batch, 0)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(list(range(k, 24, 4)),)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and not any(thread.is_alive() for thread in threads)
    assert budget.logs_released > 0
    for i, owned in enumerate(logs):
        with owned.lock:
            assert [r.value for r in decode_records(owned.log.read(0, 1 << 20))] == [
                b"%d-%d" % (i, r) for r in range(15)]
            owned.log.close()
    assert budget.open_count == 0
