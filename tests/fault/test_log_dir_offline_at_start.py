"""A log directory whose HW checkpoint is damaged goes offline at start; the broker starts on the other
(issue 40), with real processes.

Broker 1 keeps two log directories and leads four partitions replicated on three brokers
(min.insync.replicas=2), two in each directory, with acknowledged records in all of them. It stops; more
records are acknowledged by the new leaders; a byte of its second directory's HW checkpoint flips (the
checkpoint's CRC-32C no longer matches). Started again, broker 1 becomes healthy: `replog cluster
describe` and its metrics show the second directory offline, no partition whose replica lived there has
broker 1 as leader or in its ISR, and broker 1 did not create an empty replica of one in its first
directory; the partitions of its first directory rejoin the ISR, and a preferred-leader election gives
broker 1 those back and none of the others. Every acknowledged record reads back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.broker.log.checkpoints import HW_CHECKPOINT_FILE
from replog.cli.main import main
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2
from tests.fault.log_dir_helpers import describe, in_order_within, log_dir_online, read_back
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    partition_state,
    produce_raw,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

BROKERS = (1, 2, 3)
TOPIC = "spread"
PARTITIONS = 4
BATCHES = 5
DEADLINE_S = 60  # generous: the machine is shared


@pytest.fixture
def two_dir_cluster(cluster_factory):
    # built here, not at import: its certificates come from the session's CA, which the CLI trusts
    cluster = cluster_factory(ClusterSpec(controllers=1, gateways=1, broker_log_dirs=2))
    yield cluster


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # stays ASCII: only the checksum can tell
    path.write_bytes(bytes(data))


def produce_to_leaders(cluster, zk, values_of, acknowledged: dict) -> None:
    """One acks=all batch to each partition's current leader (which must take it)."""
    for partition in range(PARTITIONS):
        leader = partition_state(zk, TOPIC, partition).leader
        value = values_of(partition)
        answer = produce_raw(cluster, leader, TOPIC, batch_of([value]), acks=-1, partition=partition)
        assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
        acknowledged[partition].append(value)


def test_a_directory_with_a_damaged_checkpoint_goes_offline_and_the_broker_starts_on_the_other(two_dir_cluster,
                                                                                                capsys):
    cluster = two_dir_cluster
    kept_dir, damaged_dir = cluster.broker_log_dirs("broker-1", 2)
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {p: BROKERS for p in range(PARTITIONS)}, {"min.insync.replicas": "2"})
        for partition in range(PARTITIONS):
            wait_for_leader(cluster, zk, TOPIC, 1, DEADLINE_S, partition=partition, followers=(2, 3))
            wait_for_isr(cluster, zk, TOPIC, set(BROKERS), DEADLINE_S, partition=partition)
        on_damaged = [p for p in range(PARTITIONS) if (damaged_dir / f"{TOPIC}-{p}").is_dir()]
        kept = [p for p in range(PARTITIONS) if (kept_dir / f"{TOPIC}-{p}").is_dir()]
        assert len(on_damaged) == 2 and len(kept) == 2, "new replicas go to the directory with fewer"
        acknowledged = {p: [] for p in range(PARTITIONS)}
        for index in range(BATCHES):
            produce_to_leaders(cluster, zk, lambda p: f"before-{p}-{index}".encode(), acknowledged)

        cluster.stop("broker-1")  # a clean stop: it checkpoints its HWs one last time
        for partition in range(PARTITIONS):
            wait_for(lambda: (s := partition_state(zk, TOPIC, partition)) and s.leader in (2, 3), DEADLINE_S,
                     f"{TOPIC}-{partition} to move off the stopped broker 1")
            wait_for_leader(cluster, zk, TOPIC, partition_state(zk, TOPIC, partition).leader, DEADLINE_S,
                            partition=partition)
        produce_to_leaders(cluster, zk, lambda p: f"while-stopped-{p}".encode(), acknowledged)

        flip_a_byte(damaged_dir / HW_CHECKPOINT_FILE)
        cluster.start("broker-1")
        cluster.wait_healthy(["broker-1"], DEADLINE_S)

        broker_1 = next(b for b in describe(cluster, capsys)["brokers"] if b["broker_id"] == 1)
        assert broker_1["alive"]
        assert broker_1["log_dirs"] == [{"path": str(kept_dir), "offline": False},
                                        {"path": str(damaged_dir), "offline": True}]
        assert log_dir_online(cluster, 1, damaged_dir) == 0 and log_dir_online(cluster, 1, kept_dir) == 1

        for partition in kept:  # its first directory's replicas catch up and rejoin the ISR
            wait_for_isr(cluster, zk, TOPIC, set(BROKERS), DEADLINE_S, partition=partition)
        for partition in on_damaged:  # the controller never counts the offline replica
            state = partition_state(zk, TOPIC, partition)
            assert state.leader in (2, 3) and 1 not in state.isr, state
            assert not (kept_dir / f"{TOPIC}-{partition}").exists(), "an empty replica was created elsewhere"
        capsys.readouterr()  # the preferred leader of every partition is broker 1: it is refused where offline
        code = main(["--gateway", cluster.gateway_address, "-o", "json", "elect-leaders", "--preferred", "--all"])
        results = {r["partition"]: r["result"] for r in json.loads(capsys.readouterr().out)["partitions"]}
        assert code == 1 and results == {p: "NONE" if p in kept else "PREFERRED_LEADER_NOT_AVAILABLE"
                                         for p in range(PARTITIONS)}, results
        for partition in kept:  # broker 1, the preferred leader, leads its first directory's partitions again
            wait_for_leader(cluster, zk, TOPIC, 1, DEADLINE_S, partition=partition)
        produce_to_leaders(cluster, zk, lambda p: f"after-{p}".encode(), acknowledged)
        for partition in on_damaged:  # never elected, even preferred, and never in the ISR
            state = partition_state(zk, TOPIC, partition)
            assert state.leader in (2, 3) and 1 not in state.isr, state

        for partition in range(PARTITIONS):
            committed = read_back(cluster, zk, TOPIC, partition, BROKERS)
            assert in_order_within(acknowledged[partition], committed), \
                f"{TOPIC}-{partition}: an acknowledged record was lost: {acknowledged[partition]} vs {committed}"
        assert cluster.is_running("broker-1")
