"""Plaintext is an explicit opt-in: a cluster started insecure serves clients told so (by a flag or by
its state directory), and a client that expected TLS says what to pass instead of failing obscurely."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from replog.common.security import local
from replog.devcluster import ClusterSpec

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def replog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "replog"), *args], capture_output=True, text=True, timeout=60, env=env)


def test_an_insecure_cluster_serves_clients_that_say_so(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=0, brokers=1, gateways=1, insecure=True))
    assert cluster.operator_tls is None
    assert "--insecure" in cluster.processes["broker-1"].command
    gateway = ["--gateway", cluster.gateway_address]
    tls_env = dict(os.environ)  # names the session's certificate, as a user's shell might

    expected_tls = replog(*gateway, "topics", "list", env=tls_env)
    assert expected_tls.returncode == 1
    assert "tried over TLS" in expected_tls.stderr and "needs --insecure" in expected_tls.stderr

    assert replog(*gateway, "--insecure", "topics", "list", env=tls_env).returncode == 0
    by_state_dir = {k: v for k, v in tls_env.items() if k not in (local.ENV_CA, local.ENV_CERT, local.ENV_KEY)}
    by_state_dir[local.STATE_DIR_ENV] = str(cluster.state_dir)
    created = replog(*gateway, "topics", "create", "plain", "--partitions", "1", "--replication-factor", "1",
                     env=by_state_dir)
    assert created.returncode == 0, created.stderr


def test_a_secure_service_without_certificates_stops_and_says_what_to_pass(tmp_path):
    result = subprocess.run([str(BIN / "replog-gateway"), "--zookeeper", "127.0.0.1:1"], capture_output=True,
                            text=True, timeout=60, cwd=tmp_path,
                            env={k: v for k, v in os.environ.items() if not k.startswith("REPLOG_TLS_")})
    assert result.returncode == 2
    assert "--tls-ca-file, --tls-cert-file, --tls-key-file" in result.stderr
    assert "--insecure true" in result.stderr


def test_a_tool_started_for_a_cluster_uses_that_clusters_files_not_state_dirs(cluster_factory, tmp_path):
    # An earlier `make up` left an operator certificate of another CA in ./.state: the CLI started with the
    # cluster's client_env() must not fall back to it (bench/export.py once did: CERTIFICATE_VERIFY_FAILED).
    from replog.common.security.certificates import issue, new_authority

    stale = tmp_path / "checkout" / ".state" / "tls"
    issue(new_authority(stale), local.OPERATOR, stale)
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=1))
    env = {k: v for k, v in cluster.client_env().items() if k != local.STATE_DIR_ENV}
    done = subprocess.run([str(BIN / "replog"), "--gateway", cluster.gateway_address, "cluster", "describe"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path / "checkout")
    assert done.returncode == 0, done.stderr
