"""Log compaction on a real cluster: 100,000 writes over 1,000 keys with 10% tombstones; every replica
keeps exactly the latest value of each live key, a consumer from offset 0 sees each key's final value,
a follower that was down fetches across the leader's gaps, tombstones go after delete.retention.ms,
two producers over the same keys leave only the latest values, and __consumer_offsets is compacted."""

from __future__ import annotations

import random
from pathlib import Path

import grpc
import pytest

from replog.client import Consumer, Producer
from replog.common.records import decode_records, iter_batches
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, group_pb2, group_pb2_grpc

from .broker_helpers import broker_name, describe, wait_for
from .gateway_helpers import cli_runner
from .retention_helpers import DEADLINE_S, create

pytestmark = pytest.mark.integration

TOPIC = "changelog"
WRITES = 100_000
KEYS = 1_000
TOMBSTONE_SHARE = 0.10
FILLER_KEY = b"~filler"  # written last, so every write above lies in rolled (cleanable) segments
SEGMENT_BYTES = 16384
OFFSETS_SEGMENT_BYTES = 4096
CLEAN_DEADLINE_S = 180  # cleaning ~4 MB three times over on two busy cores, with generous slack


def spec() -> ClusterSpec:
    return ClusterSpec(controllers=1, brokers=3, gateways=1, extra_args={"broker": [
        "--log-cleaner-backoff-ms", "200", "--log-cleaner-io-max-bytes-per-second", "0",
        "--offsets-topic-num-partitions", "1", "--offsets-topic-segment-bytes", str(OFFSETS_SEGMENT_BYTES)]})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("compaction"))
    yield factory(spec())
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker") if cluster.is_running(p.name)]


LISTINGS_MAX = 20


def replica_records(cluster, broker_id: int, topic: str) -> list:
    """Every record in the replica's segment files, oldest first (read from disk: each replica's own copy).

    The cleaner may remove a segment between the listing and its read (a rewrite that kept nothing): the
    directory is then listed again."""
    directory: Path = cluster.data_dir(broker_name(broker_id)) / f"{topic}-0"
    for _ in range(LISTINGS_MAX):
        records = []
        try:
            for path in sorted(directory.glob("*.log")):
                data = path.read_bytes()
                whole = sum(header.size_bytes for _, header in iter_batches(data))
                records += decode_records(data[:whole])
        except FileNotFoundError:
            continue
        return records
    raise AssertionError(f"{directory}: a segment vanished under each of {LISTINGS_MAX} listings")


def mismatch(records, expected: dict[bytes, bytes | None]) -> str:
    """What differs from `holds_exactly`, for a failure message."""
    kept = [(r.key, r.value, r.offset) for r in records if r.key != FILLER_KEY]
    keys: dict[bytes, list] = {}
    for key, value, offset in kept:
        keys.setdefault(key, []).append((offset, value))
    repeated = {k: v for k, v in keys.items() if len(v) > 1}
    wrong = {k: v for k, v in keys.items() if v[-1][1] != expected.get(k, b"<absent>")}
    missing = set(expected) - set(keys)
    return (f"{len(kept)} records for {len(expected)} keys; {len(repeated)} keys repeated (e.g. "
            f"{list(repeated.items())[:2]}), {len(wrong)} wrong (e.g. {list(wrong.items())[:2]}), {len(missing)} missing")


def holds_exactly(records, expected: dict[bytes, bytes | None]) -> bool:
    """The records other than the filler are one per key of `expected`, with its value (None: a tombstone)."""
    kept = [(r.key, r.value) for r in records if r.key != FILLER_KEY]
    return len(kept) == len(expected) and dict(kept) == expected


def test_a_compacted_topic_keeps_the_latest_value_of_each_key_on_every_replica(cluster, replog):
    brokers = create(cluster, replog, TOPIC, {
        "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "600000",
        "min.compaction.lag.ms": "0", "segment.bytes": str(SEGMENT_BYTES), "min.insync.replicas": "2"})
    leader, follower, late_follower = brokers
    cluster.stop(broker_name(late_follower))  # it comes back after the leader cleaned: it fetches across gaps

    rng = random.Random(60)
    final: dict[bytes, bytes | None] = {}
    with Producer(bootstrap(cluster), linger_ms=5) as producer:
        handles = []
        for i in range(WRITES):
            key = b"key-%04d" % rng.randrange(KEYS)
            value = None if rng.random() < TOMBSTONE_SHARE else b"value-%06d" % i
            final[key] = value
            handles.append(producer.send(TOPIC, value, key=key))
        producer.flush()  # the filler goes in batches of its own, which roll the segment holding the last writes
        for i in range(2 * SEGMENT_BYTES // 1000):
            handles.append(producer.send(TOPIC, b"f" * 1000, key=FILLER_KEY))
        producer.flush()
        end_offset = handles[-1].result(60).offset + 1
    live = {k: v for k, v in final.items() if v is not None}
    assert end_offset == WRITES + 2 * SEGMENT_BYTES // 1000

    # A consumer reading from offset 0 while the cleaners work sees every key's final value.
    seen: dict[bytes, bytes | None] = {}
    with Consumer(bootstrap(cluster), TOPIC, start=0) as consumer:
        for record in consumer:
            seen[record.key] = record.value
            if record.offset >= end_offset - 1:
                break
    seen.pop(FILLER_KEY)
    assert {k: v for k, v in seen.items() if v is not None} == live
    assert {k for k, v in seen.items() if v is None} == set(final) - set(live)

    # The leader and the follower that stayed each clean their own copy to exactly the latest records.
    for broker_id in (leader, follower):
        wait_for(lambda b=broker_id: holds_exactly(replica_records(cluster, b, TOPIC), final), CLEAN_DEADLINE_S,
                 f"broker {broker_id} to hold exactly the latest record of each key")

    # The follower that was down catches up by fetching the leader's cleaned log, gaps and all.
    cluster.start(broker_name(late_follower))
    cluster.wait_healthy([broker_name(late_follower)])

    def caught_up():
        found = describe(cluster, late_follower, TOPIC)
        return found is not None and found.log_end_offset == end_offset
    wait_for(caught_up, DEADLINE_S, f"broker {late_follower} to catch up to {end_offset}")
    wait_for(lambda: holds_exactly(replica_records(cluster, late_follower, TOPIC), final), CLEAN_DEADLINE_S,
             f"broker {late_follower} to hold exactly the latest record of each key")
    late_offsets = {r.offset for r in replica_records(cluster, late_follower, TOPIC)}
    assert len(late_offsets) < end_offset / 10  # it never held the superseded records: the gaps came with the fetch

    # Tombstones go once delete.retention.ms has passed (changed live, without a restart).
    code, _, err = replog("topics", "alter", TOPIC, "--config", "delete.retention.ms=1000")
    assert code == 0, err
    for broker_id in brokers:
        wait_for(lambda b=broker_id: holds_exactly(replica_records(cluster, b, TOPIC), live), CLEAN_DEADLINE_S,
                 f"broker {broker_id} to drop the tombstones")

    values_after: dict[bytes, bytes | None] = {}
    with Consumer(bootstrap(cluster), TOPIC, start=0) as consumer:
        for record in consumer:
            values_after[record.key] = record.value
            if record.offset >= end_offset - 1:
                break
    values_after.pop(FILLER_KEY)
    assert values_after == live


def test_two_producers_writing_the_same_keys_leave_exactly_the_latest_value_of_each(cluster, replog):
    """Each producer's latest batch keeps only its producer state (an empty batch), not a superseded value."""
    topic = "two-writers"
    brokers = create(cluster, replog, topic, {
        "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0",
        "segment.bytes": str(SEGMENT_BYTES)})
    final: dict[bytes, bytes | None] = {}
    with Producer(bootstrap(cluster)) as first, Producer(bootstrap(cluster)) as second:
        for i in range(100):  # the producers take turns over 7 keys: each key's writes alternate between them
            key, value = b"key-%d" % (i % 7), b"value-%03d" % i
            (first, second)[i % 2].send(topic, value, key=key).result(30)
            final[key] = value
        first.send(topic, b"last", key=b"key-1").result(30)  # supersedes the second's last batch (i = 99)
        final[b"key-1"] = b"last"
        for _ in range(2 * SEGMENT_BYTES // 1000):  # rolls the segment holding the writes above
            first.send(topic, b"f" * 1000, key=FILLER_KEY).result(30)
    for broker_id in brokers:
        wait_for(lambda b=broker_id: holds_exactly(replica_records(cluster, b, topic), final), CLEAN_DEADLINE_S,
                 f"broker {broker_id} to hold exactly the latest record of each key")


def find_coordinator(cluster, group_id: str):
    try:
        answer = group_pb2_grpc.GroupServiceStub(cluster.channel(bootstrap(cluster)[0])).FindCoordinator(
            group_pb2.FindCoordinatorRequest(group_id=group_id), timeout=10)
    except grpc.RpcError:
        return None
    return answer if answer.error_code == common_pb2.ERROR_CODE_NONE else None


def test_the_offsets_topic_is_compacted_and_stops_growing_under_steady_commits(cluster, replog):
    found = wait_for(lambda: find_coordinator(cluster, "steady"), DEADLINE_S, "the offsets topic to exist")
    code, out, err = replog("topics", "describe", "__consumer_offsets")
    assert code == 0, err
    assert "cleanup.policy=compact" in out, out
    code, _, err = replog("topics", "create", "committed", "--partitions", "10", "--replication-factor", "1")
    assert code == 0, err

    stub = group_pb2_grpc.GroupServiceStub(cluster.channel(f"{found.coordinator.host}:{found.coordinator.port}"))

    def join():
        answer = stub.JoinGroup(group_pb2.JoinGroupRequest(
            group_id="steady", client_id="test", session_timeout_ms=30_000, rebalance_timeout_ms=30_000,
            protocol_type="consumer", protocols=[group_pb2.GroupProtocol(name="range", topics=["committed"])]),
            timeout=60)
        if answer.error_code != common_pb2.ERROR_CODE_NONE:
            return None
        synced = stub.SyncGroup(group_pb2.SyncGroupRequest(
            group_id="steady", generation_id=answer.generation_id, member_id=answer.member_id,
            assignments=[group_pb2.MemberAssignment(member_id=answer.member_id)]), timeout=60)
        return synced.error_code == common_pb2.ERROR_CODE_NONE and answer
    member = wait_for(join, DEADLINE_S, "the group to form")
    replicas_of = [b for b in (1, 2, 3) if describe(cluster, b, "__consumer_offsets") is not None]
    written = 0
    for phase in range(3):  # the same load three times over: the topic's size stays where it was
        for _ in range(200):
            written += 1
            reply = stub.OffsetCommit(group_pb2.OffsetCommitRequest(
                group_id="steady", generation_id=member.generation_id, member_id=member.member_id,
                partitions=[group_pb2.OffsetCommitPartition(topic="committed", partition=p, offset=written)
                            for p in range(10)]), timeout=30)
            assert reply.error_code == common_pb2.ERROR_CODE_NONE, reply

        def bounded():
            found = [describe(cluster, b, "__consumer_offsets") for b in replicas_of]
            return all(d is not None and d.log_end_offset >= written * 10 and d.size_bytes <= 6 * OFFSETS_SEGMENT_BYTES
                       for d in found) and found
        found = wait_for(bounded, CLEAN_DEADLINE_S, f"every offsets replica within 6 segments after phase {phase}")
    # 6,000 offset records of about 200 bytes were written; every replica holds a few segments' worth
    assert all(d.log_end_offset >= 6000 for d in found)

    # Deleting the group writes tombstones, which the cleaner removes once delete.retention.ms has passed.
    stub.LeaveGroup(group_pb2.LeaveGroupRequest(group_id="steady", member_id=member.member_id), timeout=30)
    code, _, err = replog("groups", "delete", "--group", "steady")
    assert code == 0, err
    latest = {}
    for record in replica_records(cluster, replicas_of[0], "__consumer_offsets"):
        if b'"steady"' in record.key:
            latest[record.key] = record.value
    assert len(latest) == 11 and all(value is None for value in latest.values())  # the group and its 10 offsets
    code, _, err = replog("topics", "alter", "__consumer_offsets", "--config", "delete.retention.ms=1000")
    assert code == 0, err
    for round_number in range(30):  # another group's commits roll the segment holding the tombstones
        reply = stub.OffsetCommit(group_pb2.OffsetCommitRequest(
            group_id="other", generation_id=-1, partitions=[group_pb2.OffsetCommitPartition(
                topic="committed", partition=p, offset=round_number) for p in range(10)]), timeout=30)
        assert reply.error_code == common_pb2.ERROR_CODE_NONE, reply
    for broker_id in replicas_of:
        wait_for(lambda b=broker_id: not any(b'"steady"' in r.key for r in replica_records(
            cluster, b, "__consumer_offsets")), CLEAN_DEADLINE_S, f"broker {broker_id} to drop the group's tombstones")


def test_a_tombstone_reads_back_as_none(cluster, replog):
    create(cluster, replog, "tombstones", {"cleanup.policy": "compact"}, replication_factor=2)
    with Producer(bootstrap(cluster)) as producer:
        producer.send("tombstones", b"v", key=b"k").result(30)
        last = producer.send("tombstones", None, key=b"k").result(30)
    with Consumer(bootstrap(cluster), "tombstones", start=0) as consumer:
        records = []
        for record in consumer:
            records.append((record.key, record.value))
            if record.offset >= last.offset:
                break
    assert records == [(b"k", b"v"), (b"k", None)]
