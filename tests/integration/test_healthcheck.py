"""`replog-healthcheck` (the container image's health check and the Kubernetes probes) reads a service's
settings from its own command line and asks its gRPC health service over mutual TLS."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replog.common.healthcheck import role_and_arguments
from replog.devcluster import ClusterSpec

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def healthcheck(command: list[str]) -> subprocess.CompletedProcess:
    role, arguments = role_and_arguments(command)
    return subprocess.run([str(BIN / "replog-healthcheck"), "--role", role, "--", *arguments],
                          capture_output=True, text=True, timeout=60)


def test_every_service_of_a_running_cluster_is_serving_and_a_stopped_one_is_not(cluster_factory):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=1, gateways=1))
    for name in ("controller-1", "broker-1", "gateway-1"):
        done = healthcheck(cluster.processes[name].command)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.strip().endswith(f"{cluster.processes[name].port}: SERVING"), done.stdout
    cluster.stop("broker-1")
    done = healthcheck(cluster.processes["broker-1"].command)
    assert done.returncode == 1 and "UNAVAILABLE" in done.stdout, done.stdout + done.stderr


def test_no_service_to_check_is_one_line():
    done = subprocess.run([str(BIN / "replog-healthcheck")], capture_output=True, text=True, timeout=60)
    # Process 1 of this machine is no replog service.
    assert done.returncode == 1 and done.stderr.startswith("replog-healthcheck: no replog service"), done.stderr
