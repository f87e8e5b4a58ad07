"""Consumers in a group on real brokers (issue 43): three share a 12-partition topic with no
partition owned twice; one dies (its heartbeats and polls stop, it never leaves) and its partitions
move within the session timeout; every record is processed at least once and none skipped; a group
started again later resumes at its committed offsets. One Consumer in a group is iterated, sought,
paused and committed like a plain one."""

from __future__ import annotations

import threading
import time

import pytest

from replog.client import Consumer, GroupConsumer, Producer, TopicPartition

from .gateway_helpers import cli_runner
from .group_helpers import GroupMember
from .group_helpers import until as wait_until

pytestmark = pytest.mark.integration

TOPIC = "events"
GROUP = "workers"
PARTITIONS = 12
SESSION_MS = 6000
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("group-consumers"))
    yield factory()
    factory.teardown()


def until(check, what: str, deadline_s: float = DEADLINE_S):
    return wait_until(check, what, deadline_s)


def produce(bootstrap, start: int, count: int) -> None:
    with Producer(bootstrap) as producer:
        for i in range(start, start + count):
            producer.send_batch(TOPIC, [f"r-{i}".encode()], partition=i % PARTITIONS)
        producer.flush(30)


def test_three_consumers_share_survive_a_death_and_resume(cluster, capsys):
    replog = cli_runner(cluster, capsys)
    for topic, partitions in (("__consumer_offsets", "3"), (TOPIC, str(PARTITIONS))):
        code, _, err = replog("topics", "create", topic, "--partitions", partitions, "--replication-factor", "3")
        assert code == 0, err
    bootstrap = [p.address for p in cluster.of_role("broker")]
    produce(bootstrap, 0, 240)
    processed: set[tuple[int, int]] = set()
    lock = threading.Lock()
    workers = [GroupMember(bootstrap, TOPIC, GROUP, f"w{i}", processed, lock, session_timeout_ms=SESSION_MS,
                           heartbeat_interval_ms=1000, max_wait_ms=200) for i in range(3)]

    def shares() -> list[tuple[TopicPartition, ...]]:
        return [w.consumer.assignment() for w in workers if w.running]

    def shared_once() -> bool:
        owned = [tp for share in shares() for tp in share]
        return len(owned) == PARTITIONS and len(set(owned)) == PARTITIONS and all(shares())

    until(shared_once, "three members to share the 12 partitions, each once")
    until(lambda: len(processed) >= 240, "every record to be processed")
    assert all(w.error is None for w in workers), [w.error for w in workers]

    workers[2].crash()
    died = time.monotonic()
    until(shared_once, "the dead member's partitions to move to the others", SESSION_MS / 1000 + 10)
    moved_s = time.monotonic() - died
    assert moved_s <= SESSION_MS / 1000 + 10, moved_s
    produce(bootstrap, 240, 120)
    until(lambda: len(processed) >= 360, "the records produced after the death to be processed")
    with lock:
        per_partition = {p: sorted(o for q, o in processed if q == p) for p in range(PARTITIONS)}
    assert all(offsets == list(range(30)) for offsets in per_partition.values())  # none skipped
    for w in workers[:2]:
        w.close()
    assert all(w.error is None for w in workers), [w.error for w in workers]

    produce(bootstrap, 360, 24)
    later = GroupConsumer(bootstrap, TOPIC, group_id=GROUP, auto_offset_reset="earliest", enable_auto_commit=False,
                          session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000, max_wait_ms=200)
    seen: list[tuple[int, int]] = []
    try:
        until(lambda: seen.extend((r.partition, r.offset) for r in later.poll(200)) or len(seen) >= 24,
              "the restarted group to read what was produced while it was stopped")
    finally:
        later.close()
    assert sorted(seen) == sorted((p, o) for p in range(PARTITIONS) for o in (30, 31))  # resumed, nothing again


def test_one_consumer_in_a_group_is_iterated_sought_paused_and_committed(cluster, capsys):
    """The Consumer with a group_id has the plain consumer's API (issue 59): iteration, assignment() of
    TopicPartitions, position, seek, pause and resume, commit (sync and async) and the rebalance callbacks."""
    topic, group = "iterated", "iterators"
    code, _, err = cli_runner(cluster, capsys)("topics", "create", topic, "--partitions", "2",
                                               "--replication-factor", "3")
    assert code == 0, err
    bootstrap = ",".join(p.address for p in cluster.of_role("broker"))
    with Producer(bootstrap) as producer:
        for i in range(40):
            producer.send(topic, b"v%d" % i, partition=i % 2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    assigned: list[list[TopicPartition]] = []
    with Consumer(bootstrap, topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                  iteration_timeout_ms=1500, max_wait_ms=200, session_timeout_ms=SESSION_MS,
                  heartbeat_interval_ms=1000, on_assign=assigned.append) as consumer:
        read = [(r.partition, r.offset) for r in consumer]
        assert sorted(read) == sorted((p, o) for p in (0, 1) for o in range(20))
        assert consumer.assignment() == [tp0, tp1] and assigned == [[tp0, tp1]]
        assert (consumer.position(tp0), consumer.position(1)) == (20, 20)  # a bare number: its one topic

        consumer.seek(tp0, 15)
        consumer.pause(tp1)
        consumer.seek(tp1, 0)
        assert [(r.partition, r.offset) for r in consumer] == [(0, o) for o in range(15, 20)]  # tp1 paused
        consumer.resume(tp1)
        consumer.seek(tp1, 18)
        assert [(r.partition, r.offset) for r in consumer] == [(1, 18), (1, 19)]

        consumer.seek(tp0, 12)
        consumer.commit()
        assert consumer.committed([tp0, tp1]) == {tp0: 12, tp1: 20}
        consumer.commit_async({tp0: 17}).result(timeout=30)
        assert consumer.committed([tp0]) == {tp0: 17}
    with Consumer(bootstrap, topic, group_id=group, enable_auto_commit=False, iteration_timeout_ms=1500,
                  max_wait_ms=200, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000) as again:
        assert [(r.partition, r.offset) for r in again] == [(0, 17), (0, 18), (0, 19)]  # from the group's offsets
