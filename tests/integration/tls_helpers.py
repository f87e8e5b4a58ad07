"""Channels and certificates for tests that talk to processes directly.

A cluster's own operator channel is `cluster.channel(address)`; these helpers serve processes a test
starts by itself, with certificates from the session's CA (conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import grpc

from replog.common.security import local
from replog.common.security.certificates import issue, load_authority
from replog.common.security.credentials import open_channel
from replog.common.security.files import TlsFiles
from replog.common.security.local import resolve_client_tls
from replog.common.security.principal import Principal
from replog.devcluster.tls import CA_DIR_ENV


def operator_channel(address: str, options=()) -> grpc.Channel:
    """A channel with the session's operator certificate (the one the environment names)."""
    return open_channel(address, resolve_client_tls(), options)


def session_certificate(principal: Principal, directory: Path) -> TlsFiles:
    """A certificate of `principal` signed by the session's CA, written into `directory`."""
    return issue(load_authority(Path(os.environ[CA_DIR_ENV])), principal, directory)


def service_flags(files: TlsFiles) -> list[str]:
    return ["--tls-ca-file", files.ca_file, "--tls-cert-file", files.cert_file, "--tls-key-file", files.key_file]


def grpcurl_flags(files: TlsFiles | None) -> list[str]:
    """grpcurl's flags to call with `files` (a cluster's operator_tls), or -plaintext without."""
    if files is None:
        return ["-plaintext"]
    return ["-cacert", files.ca_file, "-cert", files.cert_file, "-key", files.key_file]


def channel_as(cluster, principal: Principal, address: str) -> grpc.Channel:
    """A channel to `address` with the certificate of one of `cluster`'s own processes (say broker 3)."""
    return open_channel(address, local.files_of(cluster.state_dir, principal))
