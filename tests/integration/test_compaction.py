"""Log compaction on a real cluster: 100,000 writes over 1,000 keys with 10% tombstones; every replica
keeps exactly the latest value of each live key, a consumer from offset 0 sees each key's final value,
a follower that was down fetches across the leader's gaps, tombstones go after delete.retention.ms,
and __consumer_offsets is compacted."""

from __future__ import annotations

import random
from pathlib import Path

import grpc
import pytest

from replog.client import Consumer, Producer
from replog.common.records import decode_records, iter_batches
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, group_pb2, group_pb2_grpc

from .broker_helpers import broker_name, describe, stop_brokers_first, wait_for
from .gateway_helpers import cli_runner
from .retention_helpers import DEADLINE_S, create

pytestmark = pytest.mark.integration

TOPIC = "changelog"
WRITES = 100_000
KEYS = 1_000
TOMBSTONE_SHARE = 0.10
FILLER_KEY = b"~filler"  # written last, so every write above lies in rolled (cleanable) segments
SEGMENT_BYTES = 16384
CLEAN_DEADLINE_S = 180  # cleaning ~4 MB three times over on two busy cores, with generous slack


def spec() -> ClusterSpec:
    return ClusterSpec(controllers=1, brokers=3, gateways=1, extra_args={"broker": [
        "--log-cleaner-backoff-ms", "200", "--log-cleaner-io-max-bytes-per-second", "0"]})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("compaction"))
    yield factory(spec())
    stop_brokers_first(factory.clusters[0])
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker") if cluster.is_running(p.name)]


def replica_records(cluster, broker_id: int, topic: str) -> list:
    """Every record in the replica's segment files, oldest first (read from disk: each replica's own copy)."""
    records = []
    directory: Path = cluster.data_dir(broker_name(broker_id)) / f"{topic}-0"
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        whole = sum(header.size_bytes for _, header in iter_batches(data))
        records += decode_records(data[:whole])
    return records


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


def test_the_offsets_topic_is_compacted(cluster, replog):
    def coordinator_found():  # the first FindCoordinator of a cluster creates __consumer_offsets
        try:
            answer = group_pb2_grpc.GroupServiceStub(cluster.channel(bootstrap(cluster)[0])).FindCoordinator(
                group_pb2.FindCoordinatorRequest(group_id="g-compaction"), timeout=10)
        except grpc.RpcError:
            return False
        return answer.error_code == common_pb2.ERROR_CODE_NONE
    wait_for(coordinator_found, DEADLINE_S, "the offsets topic to exist")
    code, out, err = replog("topics", "describe", "__consumer_offsets")
    assert code == 0, err
    assert "cleanup.policy=compact" in out, out


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
