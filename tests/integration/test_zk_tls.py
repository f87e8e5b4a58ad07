"""ZooKeeper over TLS in a default (secure) cluster: the services reach ZooKeeper on its TLS port, which is
its only client port, and ZooKeeper refuses whoever does not speak TLS with a certificate of the cluster's
CA there: a plaintext client, a TLS client without a certificate, one with another CA's certificate, even
one that knows the super user's password. After the refusals the cluster still works.

An --insecure cluster keeps plaintext ZooKeeper (test_tls_insecure.py runs one).
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from replog.client import Consumer, Producer
from replog.common.security.certificates import issue, new_authority
from replog.common.security.files import TlsFiles
from replog.common.security.principal import Principal
from replog.common.zk import schema, session
from replog.common.zk.auth import ZkEndpoint
from replog.devcluster import zookeeper

from .broker_helpers import zk_session
from .controller_helpers import wait_for

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def zookeeper_server(cluster) -> tuple[str, int]:
    info = cluster.of_role("zookeeper")[0]
    return info.host, info.port


def test_the_cluster_runs_over_zookeeper_s_tls_port_and_it_has_no_other(shared_cluster):
    cluster = shared_cluster
    host, port = zookeeper_server(cluster)
    config = (cluster.state_dir / "zookeeper" / "zoo.cfg").read_text().splitlines()
    assert f"secureClientPort={port}" in config
    assert not [line for line in config if line.startswith("clientPort")]  # no plaintext port at all

    # Every service holds its session over TLS: ZooKeeper (asked over TLS) lists one connection or more per
    # process, and the state they wrote is there.
    connections = cluster.zookeeper_word("zookeeper", "cons") or ""
    assert connections.count("sid=") >= len([p for p in cluster.processes.values() if p.role != "zookeeper"])
    with zk_session(cluster) as zk:
        assert sorted(zk.children(schema.BROKER_IDS)) == ["1", "2", "3"]
        assert zk.get(schema.CONTROLLER) is not None

    # And the cluster works: a topic made through the gateway, written and read back.
    created = subprocess.run([str(BIN / "replog"), "--gateway", cluster.gateway_address, "topics", "create",
                              "over-tls", "--partitions", "1", "--replication-factor", "3"],
                             capture_output=True, text=True, timeout=60, env=cluster.client_env())
    assert created.returncode == 0, created.stderr
    brokers = [p.address for p in cluster.of_role("broker")]
    with Producer(brokers, acks=-1, delivery_timeout_ms=30000) as producer:
        sent = producer.send("over-tls", b"kept", partition=0)
        producer.flush(30)
    assert sent.exception() is None
    with Consumer(brokers, "over-tls", partitions=[0]) as consumer:
        records = wait_for(lambda: consumer.poll(timeout_ms=1000), 30, "the record back")
    assert [r.value for r in records] == [b"kept"]


def test_a_plaintext_client_is_refused(shared_cluster):
    host, port = zookeeper_server(shared_cluster)
    # A connect request in the clear is not a TLS record: the server closes the connection unanswered.
    with pytest.raises(session.ConnectionLost, match="ZooKeeper closed the connection"):
        session.connect([(host, port)], 5.0)
    assert zookeeper.four_letter_word(host, port, "srvr", timeout_s=2.0) in (None, "")
    plain = KazooClient(hosts=f"{host}:{port}")
    try:
        with pytest.raises(KazooTimeoutError):
            plain.start(timeout=5)
    finally:
        plain.stop()
        plain.close()


def test_a_client_without_a_certificate_of_the_cluster_s_ca_is_refused(shared_cluster, tmp_path):
    cluster = shared_cluster
    host, port = zookeeper_server(cluster)
    ca_file = cluster.operator_tls.ca_file

    # TLS, trusting the cluster's CA, but no certificate to show.
    context = ssl.create_default_context(cafile=ca_file)
    context.maximum_version = ssl.TLSVersion.TLSv1_2  # the server's refusal then ends the handshake itself
    with pytest.raises(ssl.SSLError, match="BAD_CERTIFICATE"):
        with context.wrap_socket(socket.create_connection((host, port), timeout=5), server_hostname=host) as sock:
            sock.sendall(b"srvr")

    # A certificate naming the super user's would-be host and identity, but from another CA, with the super
    # user's digest password: refused at the handshake, before any password is looked at.
    stranger = issue(new_authority(tmp_path), Principal("controller", "1"), tmp_path)
    forged = TlsFiles(ca_file, stranger.cert_file, stranger.key_file)
    with pytest.raises(session.ConnectionLost, match="CERTIFICATE_UNKNOWN"):
        session.connect([(host, port)], 5.0, credentials=cluster.zookeeper_endpoint.credentials, tls=forged)
    forger = KazooClient(**ZkEndpoint(cluster.zookeeper_connect, cluster.zookeeper_endpoint.credentials,
                                      forged).kazoo_args())
    try:
        with pytest.raises(KazooTimeoutError):
            forger.start(timeout=5)
    finally:
        forger.stop()
        forger.close()

    # The cluster's own certificate gets in, and the cluster is as it was.
    sock, _, _ = session.connect([(host, port)], 5.0, credentials=cluster.zookeeper_endpoint.credentials,
                                 tls=cluster.zookeeper_tls)
    session.close_session(sock)
    assert all(cluster.healthy(name) for name in cluster.processes)
