"""The Kubernetes manifests (deploy/kubernetes) under `podman kube play`, translated only where podman
lacks a kind (kube_play.py): ZooKeeper and brokers from their StatefulSets, controllers and the gateway
from their Deployments, certificates and credentials from make_secrets.py, mutual TLS and ZooKeeper
authentication on. A client installed from dist/ into a fresh venv produces and consumes 100,000 records;
then the broker preStop hook (replog-broker-shutdown), run in the leader's container, moves leadership
away while the broker still runs, and writes go on. Everything is removed afterwards, also on failure."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.deploy import kube_play
from tests.deploy.harness import (REPO, ClientRunner, DeployError, create_topic, leader_of, podman, volumes_of,
                                  wait_until)

RECORDS = 100_000


class PlayedCluster:
    def __init__(self, venv) -> None:
        self.run = f"replog-deploy-{secrets.token_hex(3)}"
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{self.run}-"))
        self.network = self.run
        self.venv = venv
        self.pods: dict[str, str] = {}
        self.volumes: list[str] = []

    def play(self) -> None:
        done = subprocess.run([str(self.venv.python), str(REPO / "deploy" / "kubernetes" / "make_secrets.py"),
                               "--out", str(self.scratch / "secrets")], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise DeployError(f"make_secrets.py: {done.stderr}")
        documents, pods, volumes = kube_play.translate(kube_play.load(), self.scratch / "secrets" / "files",
                                                       self.scratch / "hostpath")
        taken = [pod for pod in pods if podman("pod", "exists", pod, check=False).returncode == 0]
        if taken:
            raise DeployError(f"pods {taken} exist already (another run?): remove them first")
        self.pods, self.volumes = pods, volumes
        self.file = kube_play.write(documents, self.scratch / "played.yaml")
        podman("network", "create", self.network)
        podman("kube", "play", "--network", self.network, str(self.file), timeout=600)

    def container(self, pod: str) -> str:
        return self.pods[pod]

    def healthy(self, pod: str) -> bool:
        check = "zookeeper-ruok" if pod.startswith("zookeeper") else "replog-healthcheck"
        return podman("exec", self.container(pod), check, check=False, timeout=60).returncode == 0

    def logs(self) -> str:
        return "\n".join(f"--- {p}\n" + podman("logs", "--tail", "15", self.container(p), check=False).stderr
                         for p in self.pods)

    def down(self) -> None:
        volumes = volumes_of(list(self.pods.values()))
        for pod in self.pods:
            podman("pod", "rm", "-f", "-t", "5", pod, check=False, timeout=120)
        for volume in {*self.volumes, *volumes}:
            podman("volume", "rm", "-f", volume, check=False)
        podman("network", "rm", "-f", self.network, check=False)
        shutil.rmtree(self.scratch, ignore_errors=True)


@pytest.fixture
def played_cluster(client_venv):
    cluster = PlayedCluster(client_venv)
    try:
        cluster.play()
        yield cluster
    finally:
        cluster.down()


@pytest.mark.timeout(1800)  # images start, 100,000 records, a failover: minutes on a busy host
def test_kubernetes_manifests_serve_100k_records_over_mtls_and_the_prestop_hook_moves_leaders(
        played_cluster, client_venv, report):
    started = time.monotonic()
    cluster = played_cluster
    try:
        for pod in cluster.pods:
            wait_until(lambda: cluster.healthy(pod), 300, f"{pod} to be healthy")
    except DeployError as exc:
        raise DeployError(f"{exc}\n{cluster.logs()}") from None
    up_s = time.monotonic() - started
    work = cluster.scratch / "work"
    work.mkdir()
    client = ClientRunner(client_venv, cluster.network, cluster.scratch / "secrets" / "files" / "replog-operator-tls",
                          work, cluster.run, [f"replog-broker-{i}:9290" for i in range(3)], "replog-gateway:9090")
    try:
        create_topic(client, "deploy")
        produced = client.workload("produce", "--topic", "deploy", "--count", str(RECORDS))
        assert produced["all_acked"], produced
        leader = leader_of(client, "deploy")
        hook = podman("exec", cluster.container(f"replog-broker-{leader}"), "replog-broker-shutdown", check=False,
                      timeout=120)
        assert hook.returncode == 0, hook.stdout + hook.stderr
        def moved() -> tuple[int] | None:  # a tuple: broker 0 is a leader too
            now = leader_of(client, "deploy")
            return (now,) if now not in (leader, -1) else None

        (moved_to,) = wait_until(moved, 30, f"leadership to move off broker {leader} (the hook said: "
                                            f"{hook.stdout.strip()} {hook.stderr.strip()[-300:]})")
        more = client.workload("produce", "--topic", "deploy", "--count", "1000", "--first", str(RECORDS))
        assert more["all_acked"], more
        (work / "expected.json").write_text(json.dumps(list(range(RECORDS + 1000))))
        consumed = client.workload("consume", "--topic", "deploy", "--expect-file", "/work/expected.json")
        assert consumed["missing"] == 0, consumed
    finally:
        client.remove_containers()
    report({"records_produced": produced["acked"] + more["acked"], "produce_s": produced["seconds"],
            "prestop_moved_leader": f"{leader} -> {moved_to}", "consumed_distinct": consumed["distinct"],
            "acknowledged_lost": consumed["missing"], "duplicates": consumed["duplicates"],
            "cluster_up_s": round(up_s, 1), "test_s": round(time.monotonic() - started, 1)})
