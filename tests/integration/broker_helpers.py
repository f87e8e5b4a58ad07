"""Helpers for broker tests against real processes: topics as the gateway writes them,
raw LogService / Replication calls, and what each broker says about its replicas."""

from __future__ import annotations

import contextlib
import signal
import time

import grpc
import pytest

from replog.common.records import encode_batch
from replog.common.security.principal import Principal
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.v1 import broker_control_pb2_grpc, common_pb2, log_pb2, log_pb2_grpc
from tests.integration.controller_helpers import create_topic, wait_for
from tests.integration.tls_helpers import channel_as

__all__ = [
    "start_cluster",
    "stop_brokers_first",
    "create_topic",
    "wait_for",
    "zk_session",
    "log_stub",
    "control_stub",
    "describe",
    "partition_state",
    "wait_for_isr",
    "wait_for_leader",
    "produce_raw",
    "batch_of",
    "broker_name",
    "wait_caught_up",
]


@contextlib.contextmanager
def zk_session(cluster):
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        yield zk
    finally:
        zk.stop()


def broker_name(broker_id: int) -> str:
    return f"broker-{broker_id}"


def log_stub(cluster, broker_id: int) -> log_pb2_grpc.LogServiceStub:
    channel = cluster.channel(cluster.processes[broker_name(broker_id)].address)
    return log_pb2_grpc.LogServiceStub(channel)


def control_stub(cluster, broker_id: int) -> broker_control_pb2_grpc.BrokerControlServiceStub:
    """A caller of the broker's BrokerControlService, with controller 1's certificate (for tests of bad requests)."""
    channel = channel_as(cluster, Principal("controller", "1"), cluster.processes[broker_name(broker_id)].address)
    return broker_control_pb2_grpc.BrokerControlServiceStub(channel)


def describe(cluster, broker_id: int, topic: str, partition: int = 0) -> log_pb2.ReplicaDescription | None:
    request = log_pb2.DescribeReplicasRequest(partitions=[common_pb2.TopicPartition(topic=topic, partition=partition)])
    try:
        with cluster.channel(cluster.processes[broker_name(broker_id)].address) as channel:
            reply = log_pb2_grpc.LogServiceStub(channel).DescribeReplicas(request, timeout=5)
    except grpc.RpcError:
        return None
    return reply.replicas[0] if reply.replicas else None


def partition_state(zk: ZkClient, topic: str, partition: int = 0) -> schema.PartitionStateRecord | None:
    found = zk.get(schema.partition_state_path(topic, partition))
    return schema.PartitionStateRecord.decode(found[0]) if found else None


def registration(zk: ZkClient, broker_id: int) -> schema.BrokerRegistration:
    """What broker `broker_id` registered in ZooKeeper (its lost and offline partitions among it)."""
    return schema.BrokerRegistration.decode(broker_id, zk.get(schema.broker_path(broker_id))[0])


def request_unclean_election(zk: ZkClient, topic: str, partition: int = 0) -> None:
    """Ask the controller for an unclean election of one partition, as `replog elect-leaders --unclean` does."""
    zk.kazoo.create(schema.UNCLEAN_LEADER_ELECTION, schema.ElectionRequest(((topic, partition),)).encode())


def wait_for_isr(cluster, zk: ZkClient, topic: str, isr: set[int], timeout_s: float, partition: int = 0):
    """Wait until ZooKeeper holds `isr` and the partition's leader, asked itself, holds the same ISR.

    The leader learns of an ISR change from the controller after ZooKeeper has it, so a test that
    acts on the ISR (an acks=all write, a kill) waits for both."""
    def check():
        state = partition_state(zk, topic, partition)
        if state is None or set(state.isr) != isr:
            return None
        if state.leader < 0:
            return state
        found = describe(cluster, state.leader, topic, partition)
        agrees = (found is not None and found.leader and found.leader_epoch == state.leader_epoch
                  and set(found.isr) == isr)
        return state if agrees else None
    return wait_for(check, timeout_s, f"ISR of {topic}-{partition} to become {sorted(isr)}, "
                                      f"in ZooKeeper and at its leader")


def wait_for_leader(cluster, zk: ZkClient, topic: str, leader: int | None, timeout_s: float, partition: int = 0,
                    *, followers: tuple[int, ...] = ()):
    """Wait until ZooKeeper names `leader` (None: any live leader) and that broker says it leads at
    the leader epoch ZooKeeper holds; each broker in `followers` must say it follows at that epoch.

    The controller writes ZooKeeper before it sends LeaderAndIsr: a request sent to a broker on
    ZooKeeper's word alone can reach it before the news does and be refused with NOT_LEADER."""
    def check():
        state = partition_state(zk, topic, partition)
        if state is None or state.leader < 0 or (leader is not None and state.leader != leader):
            return None
        found = describe(cluster, state.leader, topic, partition)
        if found is None or not found.leader or found.leader_epoch != state.leader_epoch:
            return None
        for follower in followers:
            seen = describe(cluster, follower, topic, partition)
            if seen is None or seen.leader or seen.leader_epoch != state.leader_epoch:
                return None
        return state
    named = "any broker" if leader is None else f"broker {leader}"
    return wait_for(check, timeout_s, f"{named} to lead {topic}-{partition}, in ZooKeeper and by its own word"
                                      + (f", followed by {list(followers)}" if followers else ""))


def wait_caught_up(cluster, broker_ids, topic: str, end_offset: int, timeout_s: float, partition: int = 0):
    """Every broker named holds `end_offset` records and a HW at the same point."""
    def check():
        found = [describe(cluster, b, topic, partition) for b in broker_ids]
        return all(d is not None and d.log_end_offset == end_offset and d.high_watermark == end_offset
                   for d in found) and found
    return wait_for(check, timeout_s, f"{list(broker_ids)} to hold {end_offset} records of {topic}-{partition}")


def batch_of(values: list[bytes], *, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    now_ms = int(time.time() * 1000)
    return encode_batch([(None, v, now_ms) for v in values], producer_id=producer_id,
                        producer_epoch=producer_epoch, base_sequence=base_sequence)


def produce_raw(cluster, broker_id: int, topic: str, batch: bytes, *, acks: int = -1, partition: int = 0,
                timeout_ms: int = 10_000) -> log_pb2.ProducePartitionResponse:
    reply = log_stub(cluster, broker_id).Produce(log_pb2.ProduceRequest(
        acks=acks, timeout_ms=timeout_ms,
        partitions=[log_pb2.ProducePartitionData(topic=topic, partition=partition, record_batch=batch)]),
        timeout=timeout_ms / 1000 + 10)
    return reply.partitions[0]


def stop_brokers_first(cluster) -> None:
    """SIGTERM every broker (in parallel) while the controllers still run, then wait for them: for a
    test that reads the brokers' files afterwards. (A test's teardown needs no orderly stop: the cluster
    factory kills what it started.)

    Brokers stopping after their controller find nobody to answer ControlledShutdown,
    and a controller stopping while ControlledShutdown calls wait in its queue lingers
    until they time out; stopping brokers first keeps this to a few seconds.
    """
    brokers = [p.name for p in cluster.of_role("broker") if cluster.is_running(p.name)]
    for name in brokers:
        cluster.signal(name, signal.SIGTERM)
    for name in brokers:
        cluster.stop(name)


@pytest.fixture
def start_cluster(cluster_factory):
    """`start_cluster(spec)` starts a cluster; the factory's teardown kills it."""
    return cluster_factory
