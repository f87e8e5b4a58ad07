"""Identities, TLS settings at start, and how clients find their certificate (the method table:
test_method_rules.py)."""

from __future__ import annotations

import pytest

from replog.broker.config import BrokerConfig
from replog.common.config import ConfigError, load_config
from replog.common.security import local
from replog.common.security.certificates import issue, new_authority
from replog.common.security.files import TlsFiles, TlsFilesError
from replog.common.security.local import ClientTlsError, resolve_client_tls
from replog.common.security.principal import Principal, parse_uri, principal_of_identities
from replog.common.security.settings import certificate_principal, tls_files
from replog.controller.config import ControllerConfig
from replog.gateway.config import GatewayConfig

BROKER_2 = Principal("broker", "2")
CONTROLLER_1 = Principal("controller", "1")
ALICE = Principal("user", "alice")


# --- principals ------------------------------------------------------------------------------


def test_principals_print_as_kafka_users_or_service_ids():
    assert str(ALICE) == "User:alice"
    assert str(BROKER_2) == "broker:2"
    assert BROKER_2.uri == "replog://broker/2" and BROKER_2.service_id == 2
    assert ALICE.service_id is None and Principal("gateway", "1").service_id is None


@pytest.mark.parametrize("uri, principal", [
    ("replog://controller/1", CONTROLLER_1),
    ("replog://user/alice", ALICE),
    ("replog://gateway/eu-1", Principal("gateway", "eu-1")),
    ("replog://robot/1", None),
    ("replog://broker/", None),
    ("replog://broker/2/extra", None),
    ("spiffe://broker/2", None),
    ("localhost", None),
])
def test_only_replog_uris_of_known_kinds_name_a_principal(uri, principal):
    assert parse_uri(uri) == principal


def test_a_certificate_naming_two_principals_names_none():
    assert principal_of_identities([b"localhost", b"replog://broker/2", b"127.0.0.1"]) == BROKER_2
    assert principal_of_identities([b"replog://broker/2", b"replog://controller/1"]) is None
    assert principal_of_identities([]) is None


# --- settings at start -----------------------------------------------------------------------


def test_the_three_services_share_the_tls_keys_and_default_to_tls():
    for config in (BrokerConfig(), ControllerConfig(), GatewayConfig()):
        assert (config.tls_ca_file, config.tls_cert_file, config.tls_key_file, config.insecure) == ("", "", "", False)


def test_a_secure_service_without_files_names_the_flags_and_insecure():
    with pytest.raises(ConfigError) as error:
        tls_files(load_config(BrokerConfig, [], {}, prog="replog-broker"), BROKER_2)
    assert "--tls-ca-file, --tls-cert-file, --tls-key-file" in str(error.value)
    assert "--insecure true" in str(error.value)
    assert tls_files(load_config(BrokerConfig, ["--insecure", "true"], {}, prog="replog-broker"), BROKER_2) is None


def test_a_service_refuses_a_certificate_of_another_process(tmp_path):
    files = issue(new_authority(tmp_path), Principal("broker", "1"), tmp_path)
    argv = ["--tls-ca-file", files.ca_file, "--tls-cert-file", files.cert_file, "--tls-key-file", files.key_file]
    config = load_config(BrokerConfig, argv, {}, prog="replog-broker")
    assert tls_files(config, Principal("broker", "1")) == files
    with pytest.raises(ConfigError, match="names broker:1, but this process is broker:2"):
        tls_files(config, BROKER_2)


def test_certificates_carry_their_identity_and_a_key_must_match(tmp_path):
    authority = new_authority(tmp_path)
    alice = issue(authority, ALICE, tmp_path)
    bob = issue(authority, Principal("user", "bob"), tmp_path)
    assert certificate_principal(alice.read().certificate) == ALICE
    with pytest.raises(TlsFilesError, match="does not belong"):
        TlsFiles(alice.ca_file, alice.cert_file, bob.key_file).read()
    with pytest.raises(TlsFilesError, match="cannot read"):
        TlsFiles(alice.ca_file, str(tmp_path / "missing.pem"), alice.key_file).read()


# --- clients ---------------------------------------------------------------------------------


def test_clients_take_arguments_then_environment_then_the_local_cluster(tmp_path):
    state = tmp_path / "state"
    operator = local.files_of(state, local.OPERATOR)
    for path in operator.paths():
        (state / "tls").mkdir(parents=True, exist_ok=True)
        open(path, "w").close()
    env = {local.STATE_DIR_ENV: str(state)}
    assert resolve_client_tls(env=env) == operator
    from_env = {**env, local.ENV_CA: "a", local.ENV_CERT: "b", local.ENV_KEY: "c"}
    assert resolve_client_tls(env=from_env) == TlsFiles("a", "b", "c")
    assert resolve_client_tls("x", "y", "z", env=from_env) == TlsFiles("x", "y", "z")
    assert resolve_client_tls(env={**from_env, local.ENV_INSECURE: "true"}) is None
    assert resolve_client_tls("x", "y", "z", insecure=True, env=from_env) is None


def test_a_client_with_no_certificate_says_what_to_pass(tmp_path):
    with pytest.raises(ClientTlsError) as error:
        resolve_client_tls(env={local.STATE_DIR_ENV: str(tmp_path)})
    assert "--tls-ca-file" in str(error.value) and "--insecure" in str(error.value)
    with pytest.raises(ClientTlsError, match="go together"):
        resolve_client_tls("ca.pem", None, None, env={})
    (tmp_path / local.INSECURE_MARKER).write_text("")
    assert resolve_client_tls(env={local.STATE_DIR_ENV: str(tmp_path)}) is None
