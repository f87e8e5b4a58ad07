"""Certificates replaced on disk are used without a restart: a broker's own certificate, the CA a
cluster trusts (a CA rotation: the new CA is added beside the old one), and the certificate a
process's outbound channels carry."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.common.channels import ChannelCache
from replog.common.grpc_server import ServiceBinding, start_server
from replog.common.security import local
from replog.common.security.certificates import issue, load_authority, new_authority
from replog.common.security.credentials import open_channel
from replog.common.security.acl_needs import Nothing
from replog.common.security.principal import Principal, peer_principal
from replog.common.security.rules import RULES, Rule
from replog.devcluster import ClusterSpec

from .controller_helpers import wait_for

pytestmark = pytest.mark.integration


def served_serial(address: str, client) -> int:
    """The serial number of the certificate the server at `address` shows in a new handshake."""
    context = ssl.create_default_context(cafile=client.ca_file)
    context.load_cert_chain(client.cert_file, client.key_file)
    context.set_alpn_protocols(["h2"])
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def healthy_with(address: str, files) -> bool:
    try:
        with open_channel(address, files) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        return reply.status == health_pb2.HealthCheckResponse.SERVING
    except grpc.RpcError:
        return False


def test_a_broker_serves_its_new_certificate_and_trusts_a_new_ca_without_restarting(cluster_factory, tmp_path):
    cluster = cluster_factory(ClusterSpec(controllers=0, brokers=1, gateways=0))
    broker = cluster.processes["broker-1"]
    pid, operator = broker.pid, cluster.operator_tls
    tls_dir = local.tls_dir(cluster.state_dir)
    before = served_serial(broker.address, operator)

    renewed = issue(load_authority(tls_dir), Principal("broker", "1"), tls_dir)  # over the files in use
    new_serial = x509.load_pem_x509_certificate(Path(renewed.cert_file).read_bytes()).serial_number
    assert new_serial != before
    wait_for(lambda: served_serial(broker.address, operator) == new_serial, 10, "the renewed certificate")

    next_ca = new_authority(tmp_path / "next-ca", "the next CA")
    newcomer = issue(next_ca, Principal("user", "newcomer"), tmp_path)
    newcomer = type(newcomer)(operator.ca_file, newcomer.cert_file, newcomer.key_file)
    assert not healthy_with(broker.address, newcomer)
    bundle = Path(operator.ca_file).read_bytes() + Path(next_ca.ca_file).read_bytes()
    staged = tls_dir / "ca.pem.next"
    staged.write_bytes(bundle)
    staged.replace(operator.ca_file)  # as certificate tools write: the whole file at once
    wait_for(lambda: healthy_with(broker.address, newcomer), 10, "the broker to trust the next CA")
    assert healthy_with(broker.address, operator)  # the old CA's certificates still work
    assert cluster.is_running("broker-1") and cluster.processes["broker-1"].pid == pid


WHOAMI = "replog.v1.LogService"  # any principal may call it: the handler answers who called


def _add_whoami(servicer, server) -> None:
    def whoami(request, context):
        return str(peer_principal(context)).encode()

    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        WHOAMI, {"WhoAmI": grpc.unary_unary_rpc_method_handler(whoami)}),))


def test_outbound_channels_carry_the_new_certificate_once_the_files_change(tmp_path):
    authority = new_authority(tmp_path)
    server_files = issue(authority, Principal("broker", "1"), tmp_path)
    client_files = issue(authority, Principal("user", "alice"), tmp_path, stem="client")
    server = start_server([ServiceBinding(WHOAMI, _add_whoami, None)], host="127.0.0.1", port=0, tls=server_files,
                          rules={**RULES, f"/{WHOAMI}/WhoAmI": Rule(user=Nothing())})
    channels = ChannelCache(client_files)
    address = f"127.0.0.1:{server.port}"

    def caller() -> str:
        return channels.get(address).unary_unary(f"/{WHOAMI}/WhoAmI")(b"", timeout=5).decode()

    try:
        assert caller() == "User:alice"
        issue(authority, Principal("user", "bob"), tmp_path, stem="client")  # the same files, another identity
        wait_for(lambda: caller() == "User:bob", 10, "the channel to carry the new certificate")
    finally:
        channels.close()
        server.stop(0)
