"""Power loss: brokers whose log directories live on the power-loss filesystem (tests/fault/powerloss/).

A producer writes acks=all to a partition replicated on three brokers (min.insync.replicas=2). Then
the power goes: the brokers are killed with SIGKILL and their filesystems drop every write that was
not fsynced, on one broker or on all three at once, and the brokers start again.

- With the durable mode (`flush.messages=1`), every acknowledged record is still there, and no
  broker reports a loss.
- With the default policy (no fsync per append), a power loss of every broker loses acknowledged
  records, and each broker says so (a log line and `replog_broker_recovery_lost_records`) with the
  count the test itself finds missing. No replica holds every committed record, so the partition
  stays offline until unclean elections are allowed for it; then the controller elects the last ISR
  member and reports that it lost them; a power loss of one broker loses nothing in the cluster (the broker reports its local
  loss, registers as having lost records of the partition, fetches them again from the leader and
  then drops the mark from its registration).
- Every broker and the ZooKeeper server (its transaction log fsynced) losing power at once, with the
  durable mode: nothing acknowledged and no metadata is lost.

The test waits for each broker's HW checkpoint to cover the last acknowledged record before the
power goes: a broker can only report loss below its last checkpointed HW (log/clean_shutdown.py).
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
from pathlib import Path

import pytest

from replog.broker.log import HW_CHECKPOINT_FILE, read_offsets_checkpoint
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, log_pb2
from tests.fault.powerloss.control import powerloss_mount
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    log_stub,
    partition_state,
    produce_raw,
    registration,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

BROKERS = (1, 2, 3)
EVERY_BROKER = tuple(f"broker-{broker_id}" for broker_id in BROKERS)
BATCHES = 20
SPEC = ClusterSpec(
    controllers=1, gateways=0, zookeeper_session_timeout_ms=4000, zookeeper_force_sync=True,
    extra_args={"broker": ["--replica-high-watermark-checkpoint-interval-ms", "200"]},
)


@pytest.fixture
def powerloss_cluster(cluster_factory, tmp_path):
    """A cluster whose brokers' log directories and ZooKeeper's data directory are power-loss mounts;
    {process name: disk}."""
    with on_powerloss_disks(cluster_factory(SPEC, start=False), tmp_path / "backing") as (cluster, disks):
        yield cluster, disks


@contextlib.contextmanager
def on_powerloss_disks(cluster, backing: Path):
    """Start `cluster` (not started yet) with its brokers' log directories and ZooKeeper's data directory
    on power-loss mounts backed under `backing`; yields (cluster, {process name: disk})."""
    directories = {f"broker-{broker_id}": cluster.data_dir(f"broker-{broker_id}") for broker_id in BROKERS}
    directories["zookeeper"] = cluster.state_dir / "zookeeper" / "data"  # devcluster/zookeeper.py's dataDir
    with contextlib.ExitStack() as stack:
        disks = {name: stack.enter_context(powerloss_mount(backing / name, directory))
                 for name, directory in directories.items()}
        try:
            cluster.up()
            yield cluster, disks
        finally:
            for name in EVERY_BROKER:  # before the mounts go away under them; no clean stop is needed
                cluster.kill(name)
            cluster.down()


def produce_acknowledged(cluster, leader: int, topic: str) -> list[bytes]:
    acknowledged = []
    for index in range(BATCHES):
        value = f"{topic}-{index}".encode()
        answer = produce_raw(cluster, leader, topic, batch_of([value]), acks=-1)
        assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
        acknowledged.append(value)
    return acknowledged


def checkpointed_high_watermark(cluster, broker_id: int, topic: str) -> int:
    path = cluster.data_dir(f"broker-{broker_id}") / HW_CHECKPOINT_FILE
    return read_offsets_checkpoint(path).get((topic, 0), 0)


def lose_power(cluster, disks, names) -> None:
    """Kill the processes named, drop what their disks had not synced, start them (ZooKeeper first)."""
    for name in names:
        cluster.kill(name)
    for name in names:
        disks[name].power_loss()
    for name in sorted(names, key=lambda name: name != "zookeeper"):
        cluster.start(name)
        if name == "zookeeper":
            cluster.wait_healthy([name], 60)
    cluster.wait_healthy(list(names), 60)


def committed_values(cluster, zk, topic: str) -> list[bytes]:
    state = wait_for(lambda: (s := partition_state(zk, topic)) and s.leader in BROKERS and s, 60, "a leader")
    wait_for_leader(cluster, zk, topic, state.leader, 60)
    reply = log_stub(cluster, state.leader).Fetch(log_pb2.FetchRequest(
        partitions=[log_pb2.FetchPartition(topic=topic, partition=0, fetch_offset=0, current_leader_epoch=-1)],
        max_bytes=1 << 20,
        decode_records=True), timeout=20)
    (partition,) = reply.partitions
    assert partition.error_code == common_pb2.ERROR_CODE_NONE, partition
    return [record.value for record in partition.decoded_records]


def metric(cluster, broker_id: int, name: str, process: str = "broker") -> float:
    port = cluster.processes[f"{process}-{broker_id}"].metrics_port
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{process} {broker_id} has no metric {name}")


def loss_lines(cluster, broker_id: int, topic: str) -> list[str]:
    lines = []
    for line in cluster.log_path(f"broker-{broker_id}").read_text().splitlines():
        if line.startswith("{") and "committed records" in line and f"{topic}-0" in line:
            lines.append(json.loads(line)["msg"])
    return lines


def start_topic(cluster, zk, topic: str, config: dict[str, str]) -> list[bytes]:
    create_topic(zk, topic, {0: BROKERS}, {"min.insync.replicas": "2", **config})
    wait_for_leader(cluster, zk, topic, 1, 30, followers=(2, 3))
    wait_for_isr(cluster, zk, topic, set(BROKERS), 30)
    acknowledged = produce_acknowledged(cluster, 1, topic)
    wait_caught_up(cluster, BROKERS, topic, len(acknowledged), 30)
    for broker_id in BROKERS:
        wait_for(lambda b=broker_id: checkpointed_high_watermark(cluster, b, topic) == len(acknowledged), 30,
                 f"broker {broker_id}'s HW checkpoint")
    return acknowledged


def test_durable_mode_loses_nothing_when_every_broker_loses_power(powerloss_cluster):
    cluster, disks = powerloss_cluster
    with zk_session(cluster) as zk:
        acknowledged = start_topic(cluster, zk, "durable", {"flush.messages": "1"})

        lose_power(cluster, disks, EVERY_BROKER)

        assert committed_values(cluster, zk, "durable") == acknowledged
    for broker_id in BROKERS:
        assert metric(cluster, broker_id, "replog_broker_unclean_start") == 1
        assert metric(cluster, broker_id, "replog_broker_recovery_lost_records_total") == 0
        assert loss_lines(cluster, broker_id, "durable") == []
    assert metric(cluster, 1, "replog_controller_lossy_leader_elections_total", "controller") == 0


def test_default_policy_reports_the_loss_when_every_broker_loses_power(powerloss_cluster):
    cluster, disks = powerloss_cluster
    with zk_session(cluster) as zk:
        acknowledged = start_topic(cluster, zk, "lazy", {})

        lose_power(cluster, disks, EVERY_BROKER)

        # Every broker registers again with its loss of lazy-0, and the partition is offline: no replica
        # holds every committed record, and the topic does not allow an unclean election yet.
        wait_for(lambda: all(registration(zk, b).lost_partitions == (("lazy", 0),) for b in BROKERS)
                 and partition_state(zk, "lazy").leader == -1, 30, "every broker's loss and lazy-0 offline")
        zk.kazoo.set(schema.topic_config_path("lazy"), schema.TopicConfigRecord(
            {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}).encode())
        survivors = committed_values(cluster, zk, "lazy")
    missing = len([value for value in acknowledged if value not in survivors])
    assert missing > 0, "nothing was fsynced, yet every acknowledged record survived the power loss"
    for broker_id in BROKERS:
        assert metric(cluster, broker_id, "replog_broker_recovery_lost_records_total") == missing
        (line,) = loss_lines(cluster, broker_id, "lazy")
        assert f"lost {missing} committed records" in line and "unclean shutdown" in line
    # Every replica lost the records: once allowed, the controller elected one uncleanly and said what that cost.
    assert metric(cluster, 1, "replog_controller_lossy_leader_elections_total", "controller") >= 1
    assert metric(cluster, 1, "replog_controller_unclean_leader_elections_total", "controller") >= 1
    assert "lost committed records of it in an unclean shutdown" in cluster.log_path("controller-1").read_text()


def test_default_policy_loses_nothing_in_the_cluster_when_one_broker_loses_power(powerloss_cluster):
    cluster, disks = powerloss_cluster
    with zk_session(cluster) as zk:
        acknowledged = start_topic(cluster, zk, "one", {})

        lose_power(cluster, disks, ("broker-3",))

        wait_caught_up(cluster, BROKERS, "one", len(acknowledged), 60)
        assert committed_values(cluster, zk, "one") == acknowledged
        # Broker 3 registered as having lost records of one-0, until it fetched them again.
        wait_for(lambda: registration(zk, 3).lost_partitions == (), 30, "broker 3's registration to drop its mark")
    assert "one-0: back at its checkpointed high watermark" in cluster.log_path("broker-3").read_text()
    assert metric(cluster, 3, "replog_broker_recovery_lost_records_total") == len(acknowledged)  # said, then repaired
    assert metric(cluster, 1, "replog_broker_unclean_start") == 0


def test_durable_mode_loses_nothing_when_every_broker_and_zookeeper_lose_power(powerloss_cluster):
    cluster, disks = powerloss_cluster
    with zk_session(cluster) as zk:
        acknowledged = start_topic(cluster, zk, "everything", {"flush.messages": "1"})

    lose_power(cluster, disks, ("zookeeper", *EVERY_BROKER))

    with zk_session(cluster) as zk:
        assert partition_state(zk, "everything") is not None  # ZooKeeper fsyncs its transaction log
        assert committed_values(cluster, zk, "everything") == acknowledged
    for broker_id in BROKERS:
        assert metric(cluster, broker_id, "replog_broker_recovery_lost_records_total") == 0
