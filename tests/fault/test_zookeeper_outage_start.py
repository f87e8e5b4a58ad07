"""Services restarted during a ZooKeeper outage wait for it, and join when it is back.

The broker here holds the only replica of a partition. ZooKeeper goes down, and the broker,
the controller and the gateway crash and are started again during the outage. Each keeps
running: its health says NOT_SERVING, its own RPCs are refused with UNAVAILABLE, and its log
says once that it waits for ZooKeeper at the connect string. When ZooKeeper is back, all of
them serve: the broker registers, the controller takes the seat, the partition is led by its
broker again and takes writes, and the gateway answers.
"""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2, admin_pb2_grpc, common_pb2, log_pb2

from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    log_stub,
    produce_raw,
    wait_for,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

SERVICES = ("broker-1", "controller-1", "gateway-1")
TOPIC = "alone"


def health_status(cluster, name: str):
    """The process's own word on its health, or None when it does not answer."""
    try:
        with cluster.channel(cluster.processes[name].address) as channel:
            return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2).status
    except grpc.RpcError:
        return None


def since_last_start(cluster, name: str) -> list[str]:
    """The lines of `name`'s log written since it was last started (the log is appended to)."""
    lines = cluster.log_path(name).read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(f"--- starting {name} ")]
    return lines[starts[-1] + 1:]


def waiting_lines(cluster, name: str) -> list[str]:
    said = f"waiting for ZooKeeper at {cluster.zookeeper_connect}: no answer yet"
    return [line for line in since_last_start(cluster, name) if said in line]


def test_services_restarted_during_a_zookeeper_outage_join_when_it_is_back(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=1, gateways=1))
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {0: (1,)})
        wait_for_leader(cluster, zk, TOPIC, 1, 60)
        first = produce_raw(cluster, 1, TOPIC, batch_of([b"before the outage"]))
        assert first.error_code == common_pb2.ERROR_CODE_NONE, first

    cluster.stop("zookeeper")
    for name in SERVICES:
        cluster.kill(name)
    for name in SERVICES:
        cluster.start(name)
    wait_for(lambda: all(waiting_lines(cluster, name) or not cluster.is_running(name) for name in SERVICES), 60,
             "every service to say it waits for ZooKeeper")
    for name in SERVICES:
        assert cluster.is_running(name), cluster.tail(name)
        assert health_status(cluster, name) == health_pb2.HealthCheckResponse.NOT_SERVING, name
    with pytest.raises(grpc.RpcError) as refused:
        log_stub(cluster, 1).Produce(log_pb2.ProduceRequest(acks=-1, timeout_ms=5000, partitions=[
            log_pb2.ProducePartitionData(topic=TOPIC, partition=0, record_batch=batch_of([b"too early"]))]),
            timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert f"broker 1 is waiting for ZooKeeper at {cluster.zookeeper_connect}" in refused.value.details()

    cluster.start("zookeeper")
    # The crashed processes' sessions expire first (a session timeout after ZooKeeper is back):
    # only then can the broker register again and the controller take the seat.
    cluster.wait_healthy(["zookeeper", *SERVICES], 90)
    with zk_session(cluster) as zk:
        wait_for_leader(cluster, zk, TOPIC, 1, 60)
    after = produce_raw(cluster, 1, TOPIC, batch_of([b"after the outage"]))
    assert after.error_code == common_pb2.ERROR_CODE_NONE and after.base_offset == 1, after
    with cluster.channel(cluster.gateway_address) as channel:
        listed = admin_pb2_grpc.AdminServiceStub(channel).ListTopics(admin_pb2.ListTopicsRequest(), timeout=10)
    assert TOPIC in listed.topics, listed
    for name in SERVICES:
        assert len(waiting_lines(cluster, name)) == 1, since_last_start(cluster, name)
        assert not any("Traceback" in line for line in since_last_start(cluster, name)), name
