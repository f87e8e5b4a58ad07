"""The compose cluster (deploy/compose) under podman-compose: 3 ZooKeeper servers, 2 controllers, 3 brokers
and a gateway on their own hosts with mutual TLS and ZooKeeper authentication. A client installed from
dist/ into a fresh venv produces and consumes 100,000 records; then the leader's container is killed while
a producer writes, and writes must resume within the ZooKeeper session timeout plus 2 s with nothing
acknowledged lost. Everything is removed afterwards, also on failure."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.deploy.harness import (
    REPO,
    SESSION_TIMEOUT_S,
    ClientRunner,
    DeployError,
    create_topic,
    failover_check,
    podman,
    podman_env,
    volumes_of,
    wait_until,
)

COMPOSE = REPO / "deploy" / "compose"
SERVICES = ["zookeeper-1", "zookeeper-2", "zookeeper-3", "controller-1", "controller-2", "broker-1", "broker-2",
            "broker-3", "gateway-1"]
RECORDS = 100_000


class ComposeCluster:
    def __init__(self) -> None:
        self.project = f"replog-deploy-{secrets.token_hex(3)}"
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{self.project}-"))
        self.secrets = self.scratch / "secrets"
        self.env = {**podman_env(), "REPLOG_SECRETS": str(self.secrets)}

    def prepare(self, venv) -> None:
        """The CA, certificates and credentials, made by prepare.sh with the client's `replog`."""
        done = subprocess.run(["bash", str(COMPOSE / "prepare.sh"), str(self.secrets)], capture_output=True,
                              text=True, timeout=300, env={**os.environ, "REPLOG": str(venv.replog)})
        if done.returncode != 0:
            raise DeployError(f"prepare.sh: {done.stderr}")

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        command = [str(Path(sys.executable).parent / "podman-compose"), "-p", self.project, "-f",
                   str(COMPOSE / "compose.yaml"), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=self.env)
        if done.returncode != 0:
            raise DeployError(f"{' '.join(command)}: {done.stderr[-2000:]}")
        return done

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    @property
    def network(self) -> str:
        return f"{self.project}_replog"

    def healthy(self, service: str) -> bool:
        check = "zookeeper-ruok" if service.startswith("zookeeper") else "replog-healthcheck"
        return podman("exec", self.container(service), check, check=False, timeout=60).returncode == 0

    def logs(self) -> str:
        return "\n".join(f"--- {s}\n" + podman("logs", "--tail", "25", self.container(s), check=False).stdout
                         + podman("logs", "--tail", "25", self.container(s), check=False).stderr
                         for s in SERVICES if not s.startswith("zookeeper"))

    def down(self) -> None:
        volumes = volumes_of([self.container(s) for s in SERVICES])
        subprocess.run([str(Path(sys.executable).parent / "podman-compose"), "-p", self.project, "-f",
                        str(COMPOSE / "compose.yaml"), "down", "-v", "-t", "5"], capture_output=True, timeout=300,
                       env=self.env)
        for service in SERVICES:
            podman("rm", "-f", "--ignore", self.container(service), check=False)
        for volume in volumes:
            podman("volume", "rm", "-f", volume, check=False)
        podman("network", "rm", "-f", self.network, check=False)
        shutil.rmtree(self.scratch, ignore_errors=True)


@pytest.fixture
def compose_cluster(client_venv):
    cluster = ComposeCluster()
    try:
        cluster.prepare(client_venv)
        cluster.compose("up", "-d")
        yield cluster
    finally:
        cluster.down()


@pytest.mark.timeout(1800)  # images start, 100,000 records, a failover: minutes on a busy host
def test_compose_cluster_serves_100k_records_over_mtls_and_survives_its_leader(compose_cluster, client_venv,
                                                                              report):
    started = time.monotonic()
    cluster = compose_cluster
    try:
        for service in SERVICES:
            wait_until(lambda: cluster.healthy(service), 240, f"{service} to be healthy")
    except DeployError as exc:
        raise DeployError(f"{exc}\n{cluster.logs()}") from None
    up_s = time.monotonic() - started
    work = cluster.scratch / "work"
    work.mkdir()
    client = ClientRunner(client_venv, cluster.network, cluster.secrets / "operator", work, cluster.project,
                          [f"broker-{i}:9290" for i in (1, 2, 3)], "gateway-1:9090", stem="tls")
    try:
        create_topic(client, "deploy")
        produced = client.workload("produce", "--topic", "deploy", "--count", str(RECORDS))
        assert produced["all_acked"], produced

        def kill(broker_id: int) -> None:
            podman("kill", cluster.container(f"broker-{broker_id}"))

        failover = failover_check(client, "deploy", RECORDS, kill, seconds=30)
        assert failover["writes_stopped_for_s"] <= SESSION_TIMEOUT_S + 2, \
            f"{ {k: v for k, v in failover.items() if k != 'acked_values'} }\n{cluster.logs()}"
        expected = list(range(RECORDS)) + failover["acked_values"]
        (work / "expected.json").write_text(json.dumps(expected))
        consumed = client.workload("consume", "--topic", "deploy", "--expect-file", "/work/expected.json")
        assert consumed["missing"] == 0, consumed
    except DeployError as exc:  # a client call the cluster did not answer: what the services said meanwhile
        raise DeployError(f"{exc}\n{cluster.logs()}") from None
    finally:
        client.remove_containers()
    report({"records_produced": produced["acked"], "produce_s": produced["seconds"],
            "killed_broker": failover["killed_broker"], "new_leader": failover["new_leader"],
            "writes_stopped_for_s": failover["writes_stopped_for_s"],
            "first_ack_after_kill_s": failover["first_ack_after_s"], "failed_sends": failover["failed"],
            "acked_during_failover": len(failover["acked_values"]), "consumed_distinct": consumed["distinct"],
            "acknowledged_lost": consumed["missing"], "duplicates": consumed["duplicates"],
            "cluster_up_s": round(up_s, 1), "test_s": round(time.monotonic() - started, 1)})
