"""Helpers for the retention, topic-config and DeleteRecords tests: a three-broker cluster whose
retention runs often, topics made with the CLI, and what each replica holds on disk."""

from __future__ import annotations

import json
import time
from pathlib import Path

from replog.common.records import encode_batch
from replog.devcluster import ClusterSpec
from replog.v1 import log_pb2

from .broker_helpers import (
    describe,
    log_stub,
    partition_state,
    produce_raw,
    wait_for,
    wait_for_leader,
    zk_session,
)

RETENTION_CHECK_INTERVAL_MS = 300
DEADLINE_S = 60  # generous: five other engineers run tests on the same two cores



def spec() -> ClusterSpec:
    """Made when a fixture asks (ClusterSpec reads the session's CA from the environment then)."""
    return ClusterSpec(controllers=1, brokers=3, gateways=1, extra_args={"broker": [
        "--log-retention-check-interval-ms", str(RETENTION_CHECK_INTERVAL_MS)]})


def module_cluster(tmp_path_factory, name: str):
    """The body of a module-scoped cluster fixture (`yield from` it): the cluster, stopped brokers first."""
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp(name))
    yield factory(spec())
    factory.teardown()


def create(cluster, replog, topic: str, configs: dict[str, str], *, replication_factor: int = 3) -> tuple[int, ...]:
    """Create a one-partition topic with the CLI; wait for its leader and followers. Returns its replicas."""
    flags = [arg for key, value in configs.items() for arg in ("--config", f"{key}={value}")]
    code, _, err = replog("topics", "create", topic, "--partitions", "1", "--replication-factor",
                          str(replication_factor), *flags)
    assert code == 0, err
    with zk_session(cluster) as zk:
        state = wait_for(lambda: partition_state(zk, topic), DEADLINE_S, f"{topic} to get a partition state")
        wait_for_leader(cluster, zk, topic, None, DEADLINE_S)
        state = partition_state(zk, topic)
        followers = tuple(b for b in state.isr if b != state.leader)
        wait_for_leader(cluster, zk, topic, state.leader, DEADLINE_S, followers=followers)
    return (state.leader, *followers)


def leader_of(cluster, topic: str) -> int:
    with zk_session(cluster) as zk:
        return wait_for_leader(cluster, zk, topic, None, DEADLINE_S).leader


def produce(cluster, topic: str, values: list[bytes], *, timestamp_ms: int | None = None) -> int:
    """One acks=all batch through the leader; returns its base offset."""
    stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    answer = produce_raw(cluster, leader_of(cluster, topic), topic, encode_batch([(None, v, stamp) for v in values]))
    assert answer.error_code == 0, answer.error_message
    return answer.base_offset


def replicas(cluster, topic: str, brokers) -> dict[int, log_pb2.ReplicaDescription]:
    """Each broker's own description of its replica (a broker that does not answer is left out)."""
    found = {b: describe(cluster, b, topic) for b in brokers}
    return {b: d for b, d in found.items() if d is not None}


def segment_files(cluster, broker_id: int, topic: str) -> list[Path]:
    return sorted((cluster.data_dir(f"broker-{broker_id}") / f"{topic}-0").glob("*.log"))


def earliest(cluster, broker_id: int, topic: str) -> log_pb2.ListOffsetsResult:
    return log_stub(cluster, broker_id).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
        log_pb2.ListOffsetsPartition(topic=topic, partition=0, spec=log_pb2.OFFSET_SPEC_EARLIEST,
                                     current_leader_epoch=-1)]), timeout=10).partitions[0]


def fetch_at(cluster, broker_id: int, topic: str, offset: int) -> log_pb2.FetchPartitionData:
    reply = log_stub(cluster, broker_id).Fetch(log_pb2.FetchRequest(
        max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, decode_records=True,
        partitions=[log_pb2.FetchPartition(topic=topic, partition=0, fetch_offset=offset, current_leader_epoch=-1)]),
        timeout=20)
    return reply.partitions[0]


def offsets_file(path: Path, topic: str, offset: int) -> str:
    path.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": offset}], "version": 1}))
    return str(path)
