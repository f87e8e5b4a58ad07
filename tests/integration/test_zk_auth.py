"""ZooKeeper authentication and znode ACLs against a real ZooKeeper (docs/zookeeper-security.md): what each
identity may and may not do, the controller's check of broker registrations, and what a wrong
password looks like in each kind of session."""

from __future__ import annotations

import logging

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from replog.common.service import StartupError
from replog.common.zk import bulk
from replog.common.zk import multi_writer as mw
from replog.common.zk import schema
from replog.common.zk.auth import ZkEndpoint, kazoo_acl, parse_credentials
from replog.common.zk.change_feed import ChangeFeed, ChangeFeedBroken
from replog.common.zk.client import ZkClient
from replog.controller.adapters.loader import read_live_brokers
from replog.controller.adapters.watches import Watches
from replog.controller.core import events as ev

from .controller_helpers import create_topic, wait_for

pytestmark = pytest.mark.integration

STATE = schema.partition_state_path("orders", 0)


@pytest.fixture
def cluster_znodes(zk_client):
    """A topic with a partition state and a controller epoch, each with the ACL its writer gives it."""
    zk = zk_client
    create_topic(zk, "orders", {0: (1, 2)})
    for path in (schema.partitions_path("orders"), schema.partition_path("orders", 0)):
        zk.kazoo.create(path, acl=zk.acl(path))
    zk.kazoo.create(STATE, schema.PartitionStateRecord(1, 0, (1, 2), 1).encode(), acl=zk.acl(STATE))
    zk.kazoo.create(schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(1), acl=zk.acl(schema.CONTROLLER_EPOCH))
    return zk


@pytest.fixture
def session_as(zookeeper_server, zk_client):
    """`session_as(name)`: a started ZkClient in the test's chroot with process `name`'s credentials
    (None: anonymous)."""
    chroot = zk_client.connect_string[len(zookeeper_server.connect):]
    clients = []

    def make(name: str | None) -> ZkClient:
        client = ZkClient(zookeeper_server.endpoint(chroot, name))
        client.start()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.stop()


def test_an_anonymous_client_reads_nothing_and_writes_nothing(cluster_znodes, session_as):
    anonymous = session_as(None).kazoo
    with pytest.raises(NoAuthError):
        anonymous.set(schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(99))
    with pytest.raises(NoAuthError):
        anonymous.get(STATE)
    with pytest.raises(NoAuthError):
        anonymous.get_children(schema.BROKER_IDS)
    with pytest.raises(NoAuthError):  # the root is claimed: no squatting in the empty controller seat
        anonymous.create(schema.CONTROLLER, b"{}", ephemeral=True)
    with pytest.raises(NoAuthError):
        anonymous.create(schema.broker_path(7), b"{}", ephemeral=True)
    assert cluster_znodes.kazoo.get(schema.CONTROLLER_EPOCH)[0] == b"1"


def test_a_brokers_credentials_read_but_cannot_write_partition_state_or_the_controller_epoch(cluster_znodes,
                                                                                              session_as):
    broker = session_as("broker-1").kazoo
    assert schema.PartitionStateRecord.decode(broker.get(STATE)[0]).leader == 1
    with pytest.raises(NoAuthError):
        broker.set(STATE, schema.PartitionStateRecord(1, 5, (1,), 1).encode())
    with pytest.raises(NoAuthError):
        broker.set(schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(2))
    with pytest.raises(NoAuthError):
        broker.create(schema.CONTROLLER, b"{}", ephemeral=True)
    with pytest.raises(NoAuthError):
        broker.delete(schema.topic_path("orders"), recursive=True)


def test_a_brokers_credentials_mark_a_topic_for_deletion_but_cannot_change_it(cluster_znodes, session_as):
    """The Kafka listener's DeleteTopics: a broker marks a topic for deletion as the gateway does; it still
    cannot rewrite a topic's assignment or config, nor take a deletion mark back."""
    broker = session_as("broker-1").kazoo
    with pytest.raises(NoAuthError):
        broker.set(schema.topic_path("orders"), schema.TopicAssignment({0: (2, 1)}).encode())
    mark = schema.delete_topic_path("orders")
    broker.create(mark, acl=cluster_znodes.acl(mark))
    with pytest.raises(NoAuthError):
        broker.delete(mark)
    assert cluster_znodes.kazoo.exists(mark)


def test_the_gateways_credentials_cannot_write_partition_state_but_can_change_assignments(cluster_znodes,
                                                                                          session_as):
    gateway = session_as("gateway-1").kazoo
    with pytest.raises(NoAuthError):
        gateway.set(STATE, schema.PartitionStateRecord(2, 5, (2,), 1).encode())
    with pytest.raises(NoAuthError):
        gateway.set(schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(2))
    gateway.set(schema.topic_path("orders"), schema.TopicAssignment({0: (1, 2), 1: (2, 1)}).encode())


def test_a_controllers_credentials_write_partition_state_through_the_multi_writer(cluster_znodes, session_as,
                                                                                  zookeeper_server):
    controller = session_as("controller-1")
    writer = mw.MultiWriter(controller.endpoint, session_timeout_s=6)
    state = schema.PartitionStateRecord(2, 1, (2, 1), 1).encode()
    new_partition, new_state = schema.partition_path("orders", 1), schema.partition_state_path("orders", 1)
    try:
        results = writer.commit([[mw.SetData(STATE, state),
                                  mw.Create(new_partition, acl=controller.endpoint.acl(new_partition)),
                                  mw.Create(new_state, state, controller.endpoint.acl(new_state))]])
    finally:
        writer.close()
    assert results == [[mw.OK, mw.OK, mw.OK]]
    acl, _ = cluster_znodes.kazoo.get_acls(new_state)
    assert {(a.id.id.split(":")[0], a.perms) for a in acl} == {
        ("controller", 3), ("gateway", 1), ("brokers", 1)}


def register(zk: ZkClient, broker_id: int, acl) -> None:
    registration = schema.BrokerRegistration(broker_id, "127.0.0.1", 9000 + broker_id)
    zk.kazoo.create(schema.broker_path(broker_id), registration.encode(), ephemeral=True, acl=acl)


def test_broker_1_registering_as_broker_2_is_ignored_by_the_controller_and_logged(zk_client, session_as, caplog):
    controller = session_as("controller-1")
    broker_1, broker_2 = session_as("broker-1"), session_as("broker-2")
    queued: list = []
    watches = Watches(controller, lambda event, **_: queued.append(event) or True)
    watches.start()
    caplog.set_level(logging.WARNING)
    try:
        register(broker_1, 1, broker_1.acl(schema.broker_path(1)))
        # Broker 1 registers as 2, naming itself as the writer, as its own registration does; a broker
        # cannot delete a registration, so each forgery lives in a session of its own, ended to remove it.
        forger = session_as("broker-1")
        register(forger, 2, forger.acl(schema.broker_path(1)))
        changed = wait_for(lambda: [e for e in list(queued) if isinstance(e, ev.BrokersChanged)
                                    and 1 in e.live], 10, "the registrations' event")
        assert set(changed[-1].live) == {1}
        assert set(read_live_brokers(controller.endpoint)) == {1}
        refusals = [r.getMessage() for r in caplog.records if "ignoring the registration at /brokers/ids/2" in
                    r.getMessage()]
        assert refusals and "only broker-2 may register as broker 2" in refusals[0]
        forger.stop()
        # Now with an ACL naming broker-2, with a made-up hash: the controller knows broker 2's digest id.
        forger = session_as("broker-1")
        forged = [(perms, scheme, "broker-2:bm90IGJyb2tlciAyJ3MgaGFzaA==" if ident.startswith("broker-1:") else ident)
                  for perms, scheme, ident in forger.endpoint.acl(schema.broker_path(1))]
        register(forger, 2, kazoo_acl(forged))
        assert set(read_live_brokers(controller.endpoint)) == {1}
        assert "names broker-2 with a digest id that is not broker-2's" in caplog.records[-1].getMessage()
        forger.stop()
        # The real broker 2 counts.
        register(broker_2, 2, broker_2.acl(schema.broker_path(2)))
        wait_for(lambda: [e for e in list(queued) if isinstance(e, ev.BrokersChanged) and set(e.live) == {1, 2}],
                 10, "broker 2's own registration")
        assert set(read_live_brokers(controller.endpoint)) == {1, 2}
    finally:
        watches.close()


def wrong_password(zookeeper_server, chroot: str, name: str) -> ZkEndpoint:
    """Process `name`'s credentials with its own password changed: ZooKeeper takes any password, so
    the session becomes an identity no ACL names."""
    text = zookeeper_server.credentials_file(name).read_text()
    user, _, _ = text.splitlines()[0].partition(":")
    text = text.replace(text.splitlines()[0], f"{user}:not-the-password", 1)
    return ZkEndpoint(zookeeper_server.connect + chroot, parse_credentials(text, name), zookeeper_server.tls)


def test_a_wrong_password_fails_with_a_clear_error_in_every_kind_of_session(cluster_znodes, zookeeper_server):
    chroot = cluster_znodes.connect_string[len(zookeeper_server.connect):]
    endpoint = wrong_password(zookeeper_server, chroot, "controller-1")
    client = ZkClient(endpoint)
    client.start()
    try:
        with pytest.raises(StartupError, match="not authorized .*for 'controller'; check its password"):
            client.ensure_layout()
    finally:
        client.stop()
    with pytest.raises(bulk.ZkAuthError, match=f"refused a read of {STATE}: not authorized .*'controller'"):
        bulk.get_many(endpoint, [STATE])
    writer = mw.MultiWriter(endpoint, session_timeout_s=6)
    try:
        [[check, set_data]] = writer.commit([[mw.Check(schema.CONTROLLER_EPOCH, 0), mw.SetData(STATE, b"{}")]])
    finally:
        writer.close()
    assert mw.error_name(check) == "NoAuthError" or mw.error_name(set_data) == "NoAuthError"
    feed = ChangeFeed(endpoint, [schema.TOPICS], lambda path: None)
    try:
        with pytest.raises(ChangeFeedBroken, match="not authorized .*'controller'"):
            feed.open()
    finally:
        feed.close()


def test_kazoo_and_the_hand_written_sessions_authenticate_as_the_identities_in_the_file(zookeeper_server,
                                                                                        zk_client, session_as):
    controller = session_as("controller-1")
    assert controller.kazoo.get_children(schema.BROKERS)  # an anonymous session may not (above)
    assert bulk.children_many(controller.endpoint, [schema.BROKERS])[0]
    anonymous = KazooClient(**ZkEndpoint(controller.connect_string, None, zookeeper_server.tls).kazoo_args())
    anonymous.start()
    try:
        with pytest.raises(NoAuthError):
            anonymous.get_children(schema.BROKERS)
    finally:
        anonymous.stop()
        anonymous.close()


def test_without_credentials_sessions_are_anonymous_and_znodes_open_as_before(zookeeper_server):
    bootstrap = KazooClient(**zookeeper_server.endpoint().kazoo_args())
    bootstrap.start()
    bootstrap.ensure_path("/test-open")
    bootstrap.stop()
    bootstrap.close()
    client = ZkClient(zookeeper_server.endpoint("/test-open", None))
    client.start()
    try:
        client.ensure_layout()
        client.kazoo.create(schema.CONTROLLER_EPOCH, b"1", acl=client.acl(schema.CONTROLLER_EPOCH))
        for path in ("/", schema.BROKER_IDS, schema.CONTROLLER_EPOCH):
            assert [(a.id.scheme, a.id.id) for a in client.kazoo.get_acls(path)[0]] == [("world", "anyone")], path
    finally:
        client.stop()
