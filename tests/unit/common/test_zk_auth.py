"""Credentials files, digest ids, the ACL of every path, the registration check, and the auth handshake."""

from __future__ import annotations

import logging
import socket
import struct
import threading

import pytest

from replog.common.config import ConfigError
from replog.common.zk import multi_writer as mw
from replog.common.zk import schema, session
from replog.common.zk.auth import OPEN_ACL, ZkCredentials, ZkEndpoint, digest_id, load_credentials, parse_credentials
from replog.common.zk.schema import znode_acls as acls

GATEWAY = "gateway:" + "g" * 27 + "="
BROKERS = "brokers:" + "b" * 27 + "="


def broker_file(extra: str = "") -> str:
    return f"# broker 1\nbroker-1:pw1\nbrokers:group-pw\n\ndigest controller:c1=\ndigest {GATEWAY}\n{extra}"


def test_the_digest_id_is_zookeepers():
    # The example of ZooKeeper's administrator guide ("super:admin").
    assert digest_id("super", "admin") == "super:xQJmxLMiHGwaqBvst5y6rkB6HQs="


def test_a_credentials_file_names_its_identities_own_first_and_the_roles_digests():
    credentials = parse_credentials(broker_file(), "broker-1.creds")
    assert credentials.user == "broker-1"
    assert credentials.auth_packets() == [b"broker-1:pw1", b"brokers:group-pw"]
    assert credentials.digest_of("controller") == "controller:c1="
    assert credentials.digest_of("brokers") == digest_id("brokers", "group-pw")
    assert credentials.digest_of("broker-1") == digest_id("broker-1", "pw1")


@pytest.mark.parametrize("text, message", [
    ("", "no 'user:password' line"),
    ("broker-1\n", "line 1: expected 'user:password'"),
    ("bad user:pw\n", "line 1: expected 'user:password'"),
    ("broker-1:pw\ndigest gateway\n", "line 2: expected 'digest user:base64-digest'"),
    ("broker-1:pw\nbrokers:x\ndigest controller:c=\n", "no digest id for gateway"),
])
def test_a_malformed_credentials_file_is_a_configuration_error_naming_the_line(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_credentials(text, "f")


def test_a_credentials_file_readable_by_others_is_used_with_a_warning(tmp_path, caplog):
    path = tmp_path / "creds"
    path.write_text(broker_file())
    path.chmod(0o644)
    caplog.set_level(logging.WARNING)
    assert load_credentials(str(path)).user == "broker-1"
    assert "readable by others" in caplog.text


def test_a_missing_credentials_file_says_which_and_why(tmp_path):
    with pytest.raises(ConfigError, match="cannot read zookeeper_credentials_file .*nope: No such file"):
        load_credentials(str(tmp_path / "nope"))


def test_no_credentials_file_means_anonymous_sessions_open_acls_and_one_warning(caplog):
    caplog.set_level(logging.WARNING)
    assert load_credentials("") is None
    assert len(caplog.records) == 1 and "anonymous" in caplog.text
    endpoint = ZkEndpoint("127.0.0.1:2181")
    assert endpoint.acl(schema.CONTROLLER_EPOCH) == OPEN_ACL and endpoint.kazoo_auth_data() == []


def test_every_path_replog_uses_has_an_acl_and_only_its_writers_may_change_it():
    for path in schema.ACL_PATHS:
        acl = schema.acl_of_pattern(path)
        assert {g.user: g.perms & acls.READ for g in acl if g.user in acls.ROLES} == dict.fromkeys(acls.ROLES, 1)
        assert not any(g.perms & acls.ADMIN_PERM for g in acl if g.user != acls.CONTROLLER_ROLE), path
    assert {g.user for g in acls.acl_of(schema.partition_state_path("t", 0)) if g.perms & acls.WRITE} == {"controller"}
    assert {g.user for g in acls.acl_of(schema.CONTROLLER_EPOCH) if g.perms & acls.WRITE} == {"controller"}
    assert {g.user for g in acls.acl_of(schema.broker_path(4)) if g.perms & acls.WRITE} == {"broker-4"}
    with pytest.raises(ValueError, match="no ACL for '/elsewhere'"):
        acls.acl_of("/elsewhere")


def test_an_acl_names_each_role_by_its_digest_id():
    credentials = parse_credentials(broker_file(), "f")
    entries = credentials.acl(schema.broker_path(1))
    assert (acls.READ | acls.WRITE, "digest", digest_id("broker-1", "pw1")) in entries
    assert (acls.READ | acls.ADMIN_PERM, "digest", "controller:c1=") in entries
    with pytest.raises(ConfigError, match="no digest id for 'broker-2'"):
        credentials.acl(schema.broker_path(2))


OWN = "broker-2:real="


@pytest.mark.parametrize("entries, known, problem", [
    ([("digest", OWN, 3), ("digest", "controller:c=", 17)], OWN, ""),
    ([("digest", OWN, 3)], None, ""),
    ([("digest", "broker-2:x", 3)], None, ""),  # hashes hidden: the name is what can be checked
    ([("digest", "broker-1:h=", 3)], OWN, "lets digest:broker-1 change it"),
    ([("digest", OWN, 3), ("world", "anyone", 31)], OWN, "lets world:anyone change it"),
    ([("digest", "broker-2:made-up=", 3)], OWN, "names broker-2 with a digest id that is not broker-2's"),
    ([("digest", OWN, 1)], OWN, "does not name broker-2 as the writer"),
    ([], OWN, "does not name broker-2 as the writer"),
])
def test_a_registration_counts_only_when_broker_id_alone_may_change_it(entries, known, problem):
    assert acls.registration_acl_problem(entries, 2, known).endswith(problem)


def _fake_server(reply: bytes) -> tuple[socket.socket, threading.Thread]:
    ours, theirs = socket.socketpair()

    def serve():
        session.read_frame(theirs, bytearray())  # the auth request
        theirs.sendall(struct.pack(">i", len(reply)) + reply)

    thread = threading.Thread(target=serve)
    thread.start()
    return ours, thread


def test_an_auth_packet_refused_with_authfailed_is_a_clear_error():
    sock, server = _fake_server(struct.pack(">iqi", session.XID_AUTH, 0, session.ERR_AUTH_FAILED))
    with pytest.raises(session.ZkAuthError, match="refused the credentials of 'gateway' \\(AUTHFAILED\\)"):
        session.authenticate(sock, ZkCredentials((("gateway", "pw"),)))
    server.join()
    sock.close()


def test_an_auth_packet_is_the_digest_scheme_with_user_and_password():
    ours, theirs = socket.socketpair()
    seen = []

    def serve():
        seen.append(session.read_frame(theirs, bytearray()))
        reply = struct.pack(">iqi", session.XID_AUTH, 0, 0)
        theirs.sendall(struct.pack(">i", len(reply)) + reply)

    server = threading.Thread(target=serve)
    server.start()
    session.authenticate(ours, ZkCredentials((("gateway", "pw"),)))
    server.join()
    assert seen == [struct.pack(">iii", -4, 100, 0) + struct.pack(">i", 6) + b"digest" + struct.pack(">i", 10)
                    + b"gateway:pw"]


def test_a_create_in_a_multi_carries_its_acl():
    frame = mw.encode_multi(1, [mw.Create("/a", b"", ((acls.READ, "digest", "gateway:g="),))])
    assert struct.pack(">i", 1) + struct.pack(">i", 1) + struct.pack(">i", 6) + b"digest" in frame
    assert b"gateway:g=" in frame


def test_a_process_must_authenticate_as_its_own_identity(tmp_path):
    path = tmp_path / "creds"
    path.write_text(broker_file())
    path.chmod(0o600)
    assert load_credentials(str(path), "broker-1").user == "broker-1"
    with pytest.raises(ConfigError, match="authenticates as 'broker-1', but this process must authenticate as "
                                          "'broker-2'"):
        load_credentials(str(path), "broker-2")
