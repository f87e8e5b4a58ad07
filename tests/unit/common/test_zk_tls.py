"""The ZooKeeper TLS keys: off by default, the process's own TLS files where the ZooKeeper ones are empty,
a clear refusal when neither names a file, and kazoo told to verify the server."""

from __future__ import annotations

import ssl

import pytest

from replog.common.config import ConfigError, load_config
from replog.common.security.certificates import issue, new_authority
from replog.common.security.principal import Principal
from replog.common.zk.tls import client_context, kazoo_args, zookeeper_tls_files
from replog.controller.config import ControllerConfig


@pytest.fixture
def own_files(tmp_path):
    return issue(new_authority(tmp_path), Principal("controller", "1"), tmp_path)


def _config(*args: str) -> ControllerConfig:
    return load_config(ControllerConfig, list(args), env={}, prog="replog-controller")


def test_off_by_default():
    assert zookeeper_tls_files(_config("--insecure", "true")) is None


def test_the_process_own_files_serve_where_the_zookeeper_ones_are_empty(own_files, tmp_path):
    other = issue(new_authority(tmp_path / "zk"), Principal("controller", "1"), tmp_path / "zk")
    config = _config("--zookeeper-tls", "true", "--tls-ca-file", own_files.ca_file, "--tls-cert-file",
                     own_files.cert_file, "--tls-key-file", own_files.key_file, "--zookeeper-tls-ca-file",
                     other.ca_file)
    assert zookeeper_tls_files(config).paths() == (other.ca_file, own_files.cert_file, own_files.key_file)


def test_no_file_at_all_is_refused_naming_both_flags():
    with pytest.raises(ConfigError, match="--zookeeper-tls-ca-file \\(or --tls-ca-file\\)"):
        zookeeper_tls_files(_config("--zookeeper-tls", "true", "--insecure", "true"))


def test_a_key_that_is_not_the_certificate_is_refused(own_files, tmp_path):
    stranger = issue(new_authority(tmp_path / "x"), Principal("controller", "1"), tmp_path / "x")
    config = _config("--zookeeper-tls", "true", "--zookeeper-tls-ca-file", own_files.ca_file,
                     "--zookeeper-tls-cert-file", own_files.cert_file, "--zookeeper-tls-key-file", stranger.key_file)
    with pytest.raises(ConfigError, match="does not belong"):
        zookeeper_tls_files(config)


def test_kazoo_connects_with_the_context_that_trusts_the_named_ca_alone_and_checks_host_names(own_files):
    args = kazoo_args(own_files)
    assert args["use_ssl"] and args["handler"]._files == own_files
    context = client_context(own_files)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert len(context.get_ca_certs()) == 1  # the named CA, not the system's
    assert kazoo_args(None) == {}
