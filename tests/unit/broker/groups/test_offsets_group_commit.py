"""Group commit in the coordinator's offsets log: appends to one offsets partition that arrive while
another is being replicated go together as one batch, each caller's records consecutive, each caller
told its own offset; a refusal is every caller's of its batch; a batch stays within its byte bound."""

from __future__ import annotations

import threading
import time

from replog.broker.core.errors import ErrorCode
from replog.broker.groups import offsets_log
from replog.broker.groups.offsets_log import OffsetsLog
from replog.broker.produce.values import PartitionAnswer
from replog.common.core.partitions import TopicPartition

TP = TopicPartition("__consumer_offsets", 0)
WAIT_S = 10


class SlowLog:
    """A produce handler whose first append waits for `release`, so that others queue up behind it."""

    def __init__(self, error: ErrorCode = ErrorCode.NONE) -> None:
        self.release = threading.Event()
        self.first_started = threading.Event()
        self.batches: list[list[bytes]] = []
        self.error = error
        self._lock = threading.Lock()

    def produce(self, request):
        (partition,) = request.partitions
        self.first_started.set()
        self.release.wait(WAIT_S)
        with self._lock:
            base = sum(len(b) for b in self.batches)
            self.batches.append([key for key, _, _, _ in partition.records])
        if self.error is not ErrorCode.NONE:
            return [PartitionAnswer(TP, self.error, "disk trouble")]
        return [PartitionAnswer(TP, ErrorCode.NONE, base_offset=base)]


def commits_behind_a_slow_first(log: SlowLog, callers: int, records_each: int = 3):
    offsets = OffsetsLog(log, lookup=lambda tp: None, append_timeout_ms=1000, now_ms=lambda: 0)
    answers: dict[int, tuple] = {}

    def commit(i: int) -> None:
        answers[i] = offsets.append(TP, [(b"c%02d-r%d" % (i, r), b"v") for r in range(records_each)])

    first = threading.Thread(target=commit, args=(0,))
    first.start()
    assert log.first_started.wait(WAIT_S)
    rest = [threading.Thread(target=commit, args=(i,)) for i in range(1, callers)]
    for t in rest:
        t.start()
    # the others queue behind the first, which the log holds (a wait with a deadline, polling the queue)
    deadline = time.monotonic() + WAIT_S
    while sum(len(q) for q in offsets._queued.values()) < callers - 1:
        assert time.monotonic() < deadline, "the other appends never queued"
        time.sleep(0.01)
    log.release.set()
    for t in [first, *rest]:
        t.join(WAIT_S)
    return answers


def test_appends_queued_behind_one_go_as_one_batch_each_caller_knowing_its_offsets():
    log = SlowLog()
    answers = commits_behind_a_slow_first(log, callers=20)
    assert len(log.batches) == 2, "the first append, then the 19 that queued behind it in one batch"
    written = [key for batch in log.batches for key in batch]
    for i, (refusal, base_offset) in answers.items():
        assert refusal is None
        assert written[base_offset:base_offset + 3] == [b"c%02d-r%d" % (i, r) for r in range(3)]


def test_a_refused_batch_is_refused_to_every_caller_in_it():
    answers = commits_behind_a_slow_first(SlowLog(ErrorCode.NOT_LEADER), callers=6)
    assert {refusal.code for refusal, _ in answers.values()} == {ErrorCode.NOT_COORDINATOR}
    assert {base_offset for _, base_offset in answers.values()} == {-1}


def test_a_batch_carries_queued_appends_up_to_its_byte_bound(monkeypatch):
    monkeypatch.setattr(offsets_log, "GROUP_BYTES_MAX", 4 * 3 * len(b"c10-r0" + b"v"))  # four appends' records
    log = SlowLog()
    answers = commits_behind_a_slow_first(log, callers=13)
    assert all(refusal is None for refusal, _ in answers.values())
    assert [len(batch) for batch in log.batches][1:] == [12, 12, 12], "four appends (12 records) a batch"
