"""The default local cluster runs with ZooKeeper authentication (docs/zookeeper-security.md): an anonymous
client can do nothing to it, and a broker's credentials cannot make another broker live."""

from __future__ import annotations

import stat

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from replog.common.zk import schema
from replog.common.zk.auth import ZkEndpoint, load_credentials
from replog.common.zk.client import ZkClient
from replog.devcluster import zk_credentials
from replog.v1 import log_pb2

from .broker_helpers import log_stub, zk_session
from .controller_helpers import wait_for
from .gateway_helpers import cli_runner

pytestmark = pytest.mark.integration


def test_an_anonymous_client_can_neither_read_nor_change_the_default_cluster(cluster_factory):
    cluster = cluster_factory()
    for path in zk_credentials.credentials_dir(cluster.state_dir).iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # Over TLS with a certificate of the cluster's CA, but with no digest identity.
    anonymous = KazooClient(**ZkEndpoint(cluster.zookeeper_connect, None, cluster.zookeeper_tls).kazoo_args())
    anonymous.start()
    try:
        with pytest.raises(NoAuthError):
            anonymous.set(schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(1000))
        with pytest.raises(NoAuthError):
            anonymous.get_children(schema.TOPICS)
        with pytest.raises(NoAuthError):
            anonymous.delete(schema.CONTROLLER)
    finally:
        anonymous.stop()
        anonymous.close()


def live_brokers(cluster, broker_id: int) -> set[int]:
    reply = log_stub(cluster, broker_id).Metadata(log_pb2.MetadataRequest(topics=["taken"]), timeout=5)
    return {b.broker_id for b in reply.brokers}


def test_broker_1s_credentials_registering_as_broker_2_do_not_make_broker_2_live(cluster_factory, capsys):
    cluster = cluster_factory()
    cluster.stop("broker-2")
    with zk_session(cluster) as zk:
        wait_for(lambda: zk.kazoo.exists(schema.broker_path(2)) is None, 30, "broker 2's registration to go")
    wait_for(lambda: live_brokers(cluster, 1) == {1, 3}, 30, "the brokers to learn that broker 2 is gone")
    credentials = load_credentials(str(zk_credentials.credentials_dir(cluster.state_dir) / "broker-1"))
    forger = ZkClient(ZkEndpoint(cluster.zookeeper_connect, credentials, cluster.zookeeper_tls))
    forger.start()
    try:
        # Broker 1 registers as broker 2 (with broker 1's address), its own ACL on it, as its own registration has.
        broker_1 = cluster.processes["broker-1"]
        registration = schema.BrokerRegistration(2, "127.0.0.1", broker_1.port, "b", broker_1.metrics_port)
        forger.kazoo.create(schema.broker_path(2), registration.encode(), ephemeral=True,
                            acl=forger.acl(schema.broker_path(1)))
        wait_for(lambda: "ignoring the registration at /brokers/ids/2" in cluster.tail("controller-1", 200)
                 + cluster.tail("controller-2", 200), 30, "the active controller to refuse the registration")
        # The gateway places a new topic's replicas on every registered broker, 2 included; the controller,
        # which decides who is live, leaves broker 2 out of the ISR and the brokers' metadata.
        code, out, err = cli_runner(cluster, capsys)("topics", "create", "taken", "--partitions", "1",
                                                     "--replication-factor", "3")
        assert code == 0, err
        with zk_session(cluster) as zk:
            state = wait_for(lambda: (found := zk.get(schema.partition_state_path("taken", 0)))
                             and schema.PartitionStateRecord.decode(found[0]), 30, "the new partition's state")
        assert 2 not in state.isr and set(state.isr) == {1, 3}
        assert live_brokers(cluster, 1) == {1, 3} and live_brokers(cluster, 3) == {1, 3}
    finally:
        forger.stop()
