"""The listen address and the advertised address: which is published, when a config is refused, and
that a certificate must be valid for the host peers are told to dial."""

from __future__ import annotations

import pytest

from replog.broker.config import BrokerConfig
from replog.common.config import ConfigError, load_config
from replog.common.security.certificates import issue, new_authority
from replog.common.security.principal import Principal
from replog.common.security.settings import host_matches, tls_files
from replog.controller.config import ControllerConfig
from replog.gateway.config import GatewayConfig

BROKER_1 = Principal("broker", "1")


def broker(*argv: str, env: dict[str, str] | None = None) -> BrokerConfig:
    return load_config(BrokerConfig, list(argv), env or {}, prog="replog-broker")


def test_by_default_a_service_advertises_the_address_it_listens_on():
    assert broker().published_host == "127.0.0.1"
    assert broker("--host", "10.0.0.5").published_host == "10.0.0.5"


def test_an_advertised_host_is_published_instead_of_the_listen_address():
    config = broker("--host", "0.0.0.0", "--advertised-host", "10.0.0.5")
    assert (config.host, config.published_host) == ("0.0.0.0", "10.0.0.5")
    from_env = broker(env={"REPLOG_HOST": "::", "REPLOG_ADVERTISED_HOST": "broker-1.example"})
    assert from_env.published_host == "broker-1.example"


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::"])
@pytest.mark.parametrize("service", [BrokerConfig, ControllerConfig])
def test_listening_everywhere_without_an_advertised_host_is_refused_with_the_flag_to_pass(service, wildcard):
    with pytest.raises(ConfigError) as error:
        load_config(service, ["--host", wildcard], {}, prog="replog")
    assert f"--host {wildcard} listens on every interface" in str(error.value)
    assert "pass --advertised-host" in str(error.value)


def test_a_wildcard_is_not_an_address_to_advertise():
    with pytest.raises(ConfigError, match="--advertised-host='0.0.0.0' is a wildcard address"):
        broker("--host", "0.0.0.0", "--advertised-host", "0.0.0.0")
    with pytest.raises(ConfigError, match="must be a host name or IP address"):
        broker("--advertised-host", "two words")


def test_an_ipv6_address_is_not_advertised_until_peers_can_dial_one():
    with pytest.raises(ConfigError, match="is an IPv6 address, which cannot be advertised yet"):
        broker("--host", "::", "--advertised-host", "fd00::5")


def test_the_gateway_publishes_nothing_and_may_listen_everywhere():
    config = load_config(GatewayConfig, ["--host", "0.0.0.0"], {}, prog="replog-gateway")
    assert config.host == "0.0.0.0" and not hasattr(config, "advertised_host")


def test_host_matching_follows_certificate_host_name_rules():
    sans = ["127.0.0.1", "::1", "localhost", "*.brokers.example"]
    assert host_matches("127.0.0.1", sans) and host_matches("::1", sans) and host_matches("0:0::1", sans)
    assert host_matches("LOCALHOST", sans) and host_matches("b1.brokers.example", sans)
    assert not host_matches("10.0.0.5", sans)
    assert not host_matches("a.b1.brokers.example", sans)  # a wildcard stands for one label only
    assert not host_matches("brokers.example", sans)


def test_a_certificate_must_be_valid_for_the_advertised_host(tmp_path):
    files = issue(new_authority(tmp_path), BROKER_1, tmp_path)  # valid for 127.0.0.1 and localhost
    tls = ["--tls-ca-file", files.ca_file, "--tls-cert-file", files.cert_file, "--tls-key-file", files.key_file]
    listening_everywhere = broker("--host", "0.0.0.0", "--advertised-host", "127.0.0.1", *tls)
    assert tls_files(listening_everywhere, BROKER_1, listening_everywhere.published_host) == files
    elsewhere = broker("--host", "0.0.0.0", "--advertised-host", "10.0.0.5", *tls)
    with pytest.raises(ConfigError) as error:
        tls_files(elsewhere, BROKER_1, elsewhere.published_host)
    assert "is valid for 127.0.0.1, localhost, but this process advertises 10.0.0.5" in str(error.value)
