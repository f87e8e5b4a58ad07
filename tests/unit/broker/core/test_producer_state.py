"""Idempotent producer sequences (KIP-98): duplicates, order, epochs, wrap, rebuild, snapshot."""

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.produce.producer_state import (
    BATCHES_KEPT,
    SEQUENCE_MAX,
    Append,
    BatchHeader,
    Duplicate,
    ProducerStateLimits,
    ProducerStateTable,
    rebuild_producer_state,
    sequence_after,
)

PID = 7
T0 = 1_700_000_000_000  # wall-clock ms of the batches' timestamps


def write(table, *, base_sequence, count=1, producer_epoch=0, base_offset, producer_id=PID, timestamp_ms=T0):
    """Leader path: check, then (if Append) record at base_offset."""
    verdict = table.check(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence, record_count=count)
    if isinstance(verdict, Append):
        table.record(
            BatchHeader(producer_id, producer_epoch, base_sequence, sequence_after(base_sequence, count - 1),
                        base_offset, base_offset + count - 1, timestamp_ms)
        )
    return verdict


def refused(verdict, code):
    return isinstance(verdict, Refusal) and verdict.code is code


def test_new_producer_starts_at_zero_else_unknown():
    table = ProducerStateTable()
    assert refused(table.check(producer_id=PID, producer_epoch=0, base_sequence=3, record_count=1), ErrorCode.UNKNOWN_PRODUCER_ID)
    assert isinstance(write(table, base_sequence=0, count=2, base_offset=100), Append)


def test_retry_of_a_kept_batch_returns_its_original_offsets():
    table = ProducerStateTable()
    write(table, base_sequence=0, count=2, base_offset=100)
    write(table, base_sequence=2, count=3, base_offset=200)
    assert write(table, base_sequence=0, count=2, base_offset=999) == Duplicate(100, 101)
    assert write(table, base_sequence=2, count=3, base_offset=999) == Duplicate(200, 202)


def test_gap_or_old_unkept_sequence_is_out_of_order():
    table = ProducerStateTable()
    for i in range(BATCHES_KEPT + 1):
        write(table, base_sequence=i, base_offset=i)
    assert refused(write(table, base_sequence=BATCHES_KEPT + 3, base_offset=50), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert refused(write(table, base_sequence=0, base_offset=50), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert write(table, base_sequence=1, base_offset=50) == Duplicate(1, 1)


def test_epoch_bump_restarts_at_zero_and_fences_the_old_epoch():
    table = ProducerStateTable()
    write(table, base_sequence=0, count=5, base_offset=0)
    assert refused(write(table, base_sequence=5, producer_epoch=1, base_offset=5), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert isinstance(write(table, base_sequence=0, producer_epoch=1, base_offset=5), Append)
    assert table.producer_epoch(PID) == 1 and len(table.batches(PID)) == 1
    assert refused(write(table, base_sequence=5, producer_epoch=0, base_offset=6), ErrorCode.INVALID_PRODUCER_EPOCH)


def test_sequence_wraps_after_the_maximum():
    assert sequence_after(SEQUENCE_MAX, 1) == 0 and sequence_after(SEQUENCE_MAX - 1, 3) == 1
    table = ProducerStateTable()
    table.record(BatchHeader(PID, 0, SEQUENCE_MAX - 4, SEQUENCE_MAX - 2, 0, 2, T0))
    verdict = write(table, base_sequence=SEQUENCE_MAX - 1, count=3, base_offset=3)
    assert isinstance(verdict, Append)
    assert table.batches(PID)[-1].last_sequence == 0
    assert isinstance(write(table, base_sequence=1, base_offset=6), Append)


def test_non_idempotent_batches_are_not_tracked():
    table = ProducerStateTable()
    assert isinstance(table.check(producer_id=-1, producer_epoch=-1, base_sequence=-1, record_count=1), Append)
    table.record(BatchHeader(-1, -1, -1, -1, 0, 0, T0))
    assert len(table) == 0


def test_malformed_batches_are_refused():
    table = ProducerStateTable()
    assert refused(table.check(producer_id=PID, producer_epoch=0, base_sequence=0, record_count=0), ErrorCode.INVALID_REQUEST)


def test_a_full_table_refuses_a_new_producer_and_forgets_no_one():
    # The case: with LRU eviction producer 1 was forgotten once 2 and 3 wrote, and the retry
    # of its first batch (sequence 0, the answer lost) looked new and was appended a second time.
    table = ProducerStateTable(ProducerStateLimits(producer_ids_max=2))
    assert isinstance(write(table, producer_id=1, base_sequence=0, base_offset=0), Append)
    assert isinstance(write(table, producer_id=2, base_sequence=0, base_offset=1), Append)
    third = write(table, producer_id=3, base_sequence=0, base_offset=2)
    assert refused(third, ErrorCode.PRODUCER_STATE_FULL) and "producer_ids_max 2" in third.reason
    assert table.full_refusals == 1
    assert write(table, producer_id=1, base_sequence=0, base_offset=99) == Duplicate(0, 0)
    assert isinstance(write(table, producer_id=2, base_sequence=1, base_offset=3), Append), "known ones keep writing"


def test_a_full_table_forgets_producers_by_the_time_of_their_last_batch():
    limits = ProducerStateLimits(producer_ids_max=2, producer_id_expiration_ms=60_000)
    table = ProducerStateTable(limits)
    write(table, producer_id=1, base_sequence=0, base_offset=0, timestamp_ms=T0)
    assert table.expire(T0 + 10 * 60_000) == [], "below the bound nobody is forgotten, however idle"
    assert write(table, producer_id=1, base_sequence=1, base_offset=1, timestamp_ms=T0) == Append()
    write(table, producer_id=2, base_sequence=0, base_offset=2, timestamp_ms=T0 + 30_000)
    assert table.expire(T0 + 59_999) == [] and len(table) == 2
    assert table.expire(T0 + 60_000) == [1]
    assert table.producer_epoch(1) is None and table.producer_epoch(2) == 0
    # A batch timestamped earlier than the last one does not make the producer look idle for longer.
    write(table, producer_id=3, base_sequence=0, base_offset=3, timestamp_ms=T0 + 80_000)
    write(table, producer_id=2, base_sequence=1, base_offset=4, timestamp_ms=T0)
    assert table.expire(T0 + 89_999) == [] and table.expire(T0 + 90_000) == [2]


def test_a_table_rebuilt_from_the_log_expires_like_the_live_one():
    limits = ProducerStateLimits(producer_ids_max=2, producer_id_expiration_ms=60_000)
    live = ProducerStateTable(limits)
    headers = []
    for producer_id, timestamp_ms in ((1, T0), (2, T0 + 10_000)):
        write(live, producer_id=producer_id, base_sequence=0, base_offset=producer_id, timestamp_ms=timestamp_ms)
        headers.append(BatchHeader(producer_id, 0, 0, 0, producer_id, producer_id, timestamp_ms))
    rebuilt = rebuild_producer_state(headers, limits)
    assert rebuilt.snapshot() == live.snapshot()
    assert rebuilt.expire(T0 + 65_000) == live.expire(T0 + 65_000) == [1]


def test_new_leader_rebuilt_from_its_log_answers_a_retry_as_a_duplicate():
    # The old leader wrote three batches and they were replicated; the new leader replays its log.
    old_leader = ProducerStateTable()
    headers = []
    for i, offset in enumerate([10, 11, 12]):
        write(old_leader, base_sequence=i, base_offset=offset)
        headers.append(BatchHeader(PID, 0, i, i, offset, offset, T0))
    new_leader = rebuild_producer_state(headers)
    # The producer never saw the ack for sequence 2 and retries it after failover.
    assert write(new_leader, base_sequence=2, base_offset=99) == Duplicate(12, 12)
    assert isinstance(write(new_leader, base_sequence=3, base_offset=13), Append)


def test_snapshot_round_trips_and_replay_continues_from_it():
    table = ProducerStateTable()
    write(table, base_sequence=0, count=2, base_offset=0)
    write(table, producer_id=8, base_sequence=0, base_offset=2)
    restored = ProducerStateTable.restore(table.snapshot())
    assert restored.snapshot() == table.snapshot()
    rebuild_producer_state([BatchHeader(PID, 0, 2, 2, 3, 3, T0)], base=restored)
    assert write(restored, base_sequence=2, base_offset=50) == Duplicate(3, 3)


def test_unknown_snapshot_version_is_rejected():
    try:
        ProducerStateTable.restore({"version": 99, "producers": []})
    except ValueError:
        return
    raise AssertionError("expected ValueError")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.booleans()), max_size=30))
def test_rebuilt_state_equals_the_live_state(batches):
    """Whatever a leader accepted, replaying its log yields the same producer state."""
    live = ProducerStateTable()
    log: list[BatchHeader] = []
    next_sequence = {0: 0, 1: 0, 2: 0}
    offset = 0
    for producer_id, count, retry in batches:
        sequence = max(0, next_sequence[producer_id] - count) if retry else next_sequence[producer_id]
        verdict = live.check(producer_id=producer_id, producer_epoch=0, base_sequence=sequence, record_count=count)
        if isinstance(verdict, Append):
            header = BatchHeader(producer_id, 0, sequence, sequence + count - 1, offset, offset + count - 1, T0)
            live.record(header)
            log.append(header)
            offset += count
            next_sequence[producer_id] = sequence + count
    assert rebuild_producer_state(log).snapshot() == live.snapshot()
