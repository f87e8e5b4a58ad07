"""The scrubber over real partition logs: bit rot in a rolled segment is found at a bounded rate; a
follower cuts its log there and takes the records again from its leader; a leader serves an error, never
the damaged records."""

from __future__ import annotations

from pathlib import Path

from replog.broker.core.errors import ErrorCode
from replog.broker.log import LogConfig, PartitionLog
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.leader_side import read_for_consumer
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.broker.maintenance.scrubber import Scrubber
from replog.common.clock import ManualClock
from replog.common.records import decode_records
from tests.unit.broker.replicas.test_replication_steps import TP, decide, fetch_round, produce, values

SMALL_SEGMENTS = LogConfig(segment_bytes=400)
RECORDS = [b"record-%d" % i for i in range(30)]


def hosted(tmp_path: Path, broker_id: int, clock: ManualClock) -> HostedPartition:
    log = PartitionLog.open(tmp_path / f"b{broker_id}" / "orders-0", SMALL_SEGMENTS, clock)
    return HostedPartition(TP, broker_id, log, high_watermark=0, producer_state=rebuild_from_log(log))


def replicated_pair(tmp_path: Path, clock: ManualClock) -> tuple[HostedPartition, HostedPartition]:
    leader, follower = hosted(tmp_path, 1, clock), hosted(tmp_path, 2, clock)
    decide(leader, 1, 0)
    decide(follower, 1, 0)
    for value in RECORDS:
        produce(leader, [value])
    while follower.log.log_end_offset < leader.log.log_end_offset:
        fetch_round(leader, follower, 0)
    fetch_round(leader, follower, 0)
    assert follower.log.segment_count > 2
    return leader, follower


def rot(replica: HostedPartition, segment_index: int) -> int:
    """Flip a bit inside a record of a rolled segment; its base offset."""
    path = sorted(replica.log.directory.glob("*.log"))[segment_index]
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x10
    path.write_bytes(bytes(data))
    return int(path.stem)


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def inc(self) -> None:
        self.count += 1


def test_a_follower_cuts_a_rotten_segment_and_fetches_it_again(tmp_path):
    clock = ManualClock()
    leader, follower = replicated_pair(tmp_path, clock)
    base_offset = rot(follower, 1)
    found = Counter()
    scrubber = Scrubber(lambda: [follower], clock, bytes_per_second=1 << 20, on_corrupt=found.inc)

    clock.advance(1000)
    scrubber()

    assert found.count == 1
    assert follower.log.log_end_offset == base_offset
    while follower.log.log_end_offset < leader.log.log_end_offset:
        fetch_round(leader, follower, 0)
    assert values(follower) == RECORDS
    assert follower.log.verify() == []


def test_the_rate_bounds_how_much_is_verified_per_call(tmp_path):
    clock = ManualClock()
    _, follower = replicated_pair(tmp_path, clock)
    rot(follower, -2)  # the last rolled segment: reached only after every other one was verified
    found = Counter()
    segment_bytes = (tmp_path / "b2" / "orders-0" / "00000000000000000000.log").stat().st_size
    scrubber = Scrubber(lambda: [follower], clock, bytes_per_second=segment_bytes, on_corrupt=found.inc)
    rolled = follower.log.segment_count - 1
    for _ in range(rolled - 1):
        clock.advance(1000)
        scrubber()
    assert found.count == 0  # one segment a second: not there yet
    clock.advance(1000)
    scrubber()
    assert found.count == 1


def test_a_pass_lists_the_hosted_replicas_once_however_many_segments_it_verifies(tmp_path):
    # Listing and sorting every hosted replica for each segment cost a quarter of a core at 10,000 partitions.
    clock = ManualClock()
    _, follower = replicated_pair(tmp_path, clock)
    rot(follower, -2)  # the last rolled segment: reached only after every other one was verified
    listed, found = Counter(), Counter()

    def replicas():
        listed.inc()
        return [follower]

    scrubber = Scrubber(replicas, clock, bytes_per_second=1 << 30, on_corrupt=found.inc)
    clock.advance(1000)
    scrubber()
    assert found.count == 1 and follower.log.segment_count > 3  # the pass verified several segments
    assert listed.count <= 2  # this pass, and the next one begun to find the call's next segment


def test_a_leader_keeps_its_rotten_segment_and_serves_an_error_instead(tmp_path):
    clock = ManualClock()
    leader, _ = replicated_pair(tmp_path, clock)
    end_offset = leader.log.log_end_offset
    rot(leader, 0)
    found = Counter()
    scrubber = Scrubber(lambda: [leader], clock, bytes_per_second=1 << 20, on_corrupt=found.inc)
    clock.advance(1000)
    scrubber()

    assert found.count == 1 and leader.log.log_end_offset == end_offset
    served, offset = [], 0
    while True:  # a consumer reading from the start gets every record up to the damage, then an error
        answer = read_for_consumer(leader, current_leader_epoch=-1, fetch_offset=offset, bytes_max=1 << 20)
        if answer.error_code is not ErrorCode.NONE:
            break
        records = decode_records(answer.records, offset)
        served += [record.value for record in records]
        offset = records[-1].offset + 1
    assert answer.error_code is ErrorCode.STORAGE_ERROR and "corrupt" in answer.message
    assert served == RECORDS[:offset] and 0 < offset < len(RECORDS)


def test_a_leader_gives_up_its_leadership_once_then_cuts_the_segment_as_a_follower(tmp_path):
    clock = ManualClock()
    leader, follower = replicated_pair(tmp_path, clock)
    base_offset = rot(leader, 1)
    found, resigned, refetched = Counter(), [], []
    scrubber = Scrubber(lambda: [leader], clock, bytes_per_second=1 << 20, on_corrupt=found.inc,
                        resign=resigned.append, refetch=refetched.append)
    for _ in range(3):  # several whole passes over the log while the controller has not moved it yet
        clock.advance(1000)
        scrubber()
    assert resigned == [TP] and found.count == 1
    assert leader.log.log_end_offset == len(RECORDS)

    decide(follower, 2, 1, isr=(2,))  # the controller moved the leadership; the old leader follows broker 2
    decide(leader, 2, 1, isr=(2,))
    clock.advance(1000)
    scrubber()
    assert leader.log.log_end_offset == base_offset and refetched == [TP]  # the follower's path: cut, fetch again
    assert resigned == [TP] and found.count == 1  # one damaged segment: counted and reported once
    while leader.log.log_end_offset < follower.log.log_end_offset:
        fetch_round(follower, leader, 1)
    assert values(leader) == RECORDS and leader.log.verify() == []


def test_a_leader_made_leader_again_before_it_cut_the_segment_gives_the_leadership_up_again(tmp_path):
    clock = ManualClock()
    leader, _ = replicated_pair(tmp_path, clock)
    rot(leader, 1)
    found, resigned = Counter(), []
    scrubber = Scrubber(lambda: [leader], clock, bytes_per_second=1 << 20, on_corrupt=found.inc,
                        resign=resigned.append)
    clock.advance(1000)
    scrubber()
    decide(leader, 1, 1)  # the controller moved the leadership away and back before the next pass
    clock.advance(1000)
    scrubber()
    assert resigned == [TP, TP] and found.count == 1
