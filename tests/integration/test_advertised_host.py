"""Services listening on every interface (0.0.0.0) but advertising 127.0.0.1: what they publish in
ZooKeeper and in metadata is the address peers can dial, so replication, the controller's requests
and a client's produce and fetch all work, over TLS checked against the advertised host."""

from __future__ import annotations

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.client import Consumer, Producer
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import log_pb2, log_pb2_grpc

from .broker_helpers import create_topic, wait_for_leader, zk_session

pytestmark = pytest.mark.integration

EVERYWHERE = ["--host", "0.0.0.0", "--advertised-host", "127.0.0.1"]
RECORDS = 200


@pytest.fixture
def cluster(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=2, gateways=0,
                                          extra_args={"broker": EVERYWHERE, "controller": EVERYWHERE}))
    yield cluster


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def test_brokers_listening_everywhere_register_and_serve_their_advertised_address(cluster):
    with zk_session(cluster) as zk:
        for broker in cluster.of_role("broker"):
            data, _ = zk.get(schema.broker_path(broker.instance_id))
            registration = schema.BrokerRegistration.decode(broker.instance_id, data)
            assert (registration.host, registration.port) == ("127.0.0.1", broker.port)
        data, _ = zk.get(schema.CONTROLLER)
        assert schema.ControllerRecord.decode(data).host == "127.0.0.1"
        # Replication factor 2: the follower fetches from the leader at its advertised address.
        create_topic(zk, "everywhere", {0: (1, 2)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "everywhere", 1, 30, followers=(2,))

    with cluster.channel(bootstrap(cluster)[0]) as channel:
        reply = log_pb2_grpc.LogServiceStub(channel).Metadata(log_pb2.MetadataRequest(topics=["everywhere"]),
                                                              timeout=5)
    assert {(b.broker_id, b.host) for b in reply.brokers} == {(1, "127.0.0.1"), (2, "127.0.0.1")}

    with Producer(bootstrap(cluster), acks=-1) as producer:
        futures = [producer.send("everywhere", f"record-{i}".encode(), partition=0) for i in range(RECORDS)]
        producer.flush(30)
    assert [f.result().offset for f in futures] == list(range(RECORDS))
    with Consumer(bootstrap(cluster), "everywhere") as consumer:
        seen = []
        for _ in range(100):
            seen += consumer.poll(500)
            if len(seen) >= RECORDS:
                break
    assert [r.value for r in seen] == [f"record-{i}".encode() for i in range(RECORDS)]


def test_a_broker_listening_everywhere_answers_on_another_local_address(cluster):
    # 127.0.0.2 is a loopback address a broker bound to 127.0.0.1 alone would not answer on; its
    # certificate names 127.0.0.1 and localhost, so the check is made against localhost.
    broker = cluster.of_role("broker")[0]
    options = [("grpc.ssl_target_name_override", "localhost")] if cluster.operator_tls else []

    with cluster.channel(f"127.0.0.2:{broker.port}", options) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
