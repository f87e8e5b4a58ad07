"""replog as Prometheus sees it, with Prometheus' own programs: a scrape of every process passes
`promtool check metrics` without a warning, and Debian's Prometheus, run with the shipped scrape
configuration and alert rules against a real local cluster, fires ReplogUnderReplicatedPartitions
when a broker is killed and resolves it once the broker is back, as its own HTTP API reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec
from replog.devcluster.ports import free_port

from .controller_helpers import create_topic, states, wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "deploy" / "prometheus"
SESSION_MS = 3000
ALERT = "ReplogUnderReplicatedPartitions"
SHIPPED_FOR = "30s"  # the alert's `for` in replog-alerts.yml; `promtool test rules` checks its timing
FOR_S = 5  # the same in the test's copy of the rules, so that firing costs seconds, not half a minute
# Every partition has a replica on broker 3 and a leader elsewhere once it is gone.
ASSIGNMENT = {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("prometheus"))
    try:
        cluster = factory(ClusterSpec(zookeeper_session_timeout_ms=SESSION_MS))
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        try:
            create_topic(zk, "watched", ASSIGNMENT, {"min.insync.replicas": "1"})
            wait_for(lambda: all(s and len(s[0].isr) == 3 for s in states(zk, "watched", 3).values()), 20,
                     "the topic's full ISRs")
        finally:
            zk.stop()
        yield cluster
    finally:
        factory.teardown()


def scrape(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def test_every_process_scrape_passes_promtool_check_metrics(cluster):
    recorded = json.loads((cluster.state_dir / "cluster.json").read_text())["processes"]
    services = {name: info for name, info in recorded.items() if info["role"] != "zookeeper"}
    assert {info["role"] for info in services.values()} == {"controller", "broker", "gateway"}
    for name, info in sorted(services.items()):
        text = scrape(info["metrics_port"])
        assert f"replog_{info['role']}_info{{" in text, name
        result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True,
                                timeout=30)
        assert (result.returncode, result.stdout + result.stderr) == (0, ""), name


def test_a_process_waiting_for_zookeeper_is_scraped_and_says_so(tmp_path, venv_bin):
    """Metrics are served from the start, so ReplogZooKeeperDisconnected sees a process that cannot reach
    ZooKeeper at all (nobody listens on the connect string here)."""
    port = free_port()
    broker = subprocess.Popen(
        [str(venv_bin / "replog-broker"), "--broker-id", "7", "--zookeeper", f"127.0.0.1:{free_port()}",
         "--port", "0", "--metrics-port", str(port), "--log-dir", str(tmp_path / "data"), "--insecure", "true"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        def scraped():
            try:
                return scrape(port)
            except OSError:
                assert broker.poll() is None, "the broker exited"
                return None

        text = wait_for(scraped, 30, "the waiting broker's /metrics")
        assert "replog_zookeeper_connected 0.0" in text.splitlines()
        assert 'replog_broker_info{broker_id="7",rack="",version="' in text
    finally:
        broker.terminate()
        broker.wait(timeout=30)


class Prometheus:
    """Debian's prometheus, run on the shipped configuration and rules with short intervals and the watched
    alert's `for` shortened (the test's only changes)."""

    def __init__(self, cluster, workdir: Path) -> None:
        # The shipped prometheus.yml names its rule file and the target list relative to itself
        # (deploy/prometheus/ -> ../../.state/): lay out the same tree, with .state the cluster's.
        config_dir = workdir / "checkout" / "deploy" / "prometheus"
        config_dir.mkdir(parents=True)
        (workdir / "checkout" / ".state").symlink_to(cluster.state_dir)
        config = yaml.safe_load((SHIPPED / "prometheus.yml").read_text())
        for rule_file in config["rule_files"]:
            rules = yaml.safe_load((SHIPPED / rule_file).read_text())
            for rule in (r for group in rules["groups"] for r in group["rules"]):
                if rule.get("alert") == ALERT:
                    assert rule["for"] == SHIPPED_FOR, rule  # the test's shortened `for` stands for this one
                    rule["for"] = f"{FOR_S}s"
            (config_dir / rule_file).write_text(json.dumps(rules))
        config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"}
        (config_dir / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.port = free_port()
        self.log = open(workdir / "prometheus.log", "wb")
        self.process = subprocess.Popen(
            ["prometheus", f"--config.file={config_dir / 'prometheus.yml'}",
             f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def api(self, path: str):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/{path}", timeout=5) as answer:
            return json.load(answer)["data"]

    def answers(self):
        try:
            return self.api("status/runtimeinfo")
        except OSError:
            assert self.process.poll() is None, "prometheus exited; see prometheus.log"
            return None

    def alert_states(self, name: str) -> set[str]:
        return {a["state"] for a in self.api("alerts")["alerts"] if a["labels"]["alertname"] == name}

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()


@pytest.fixture
def prometheus(cluster, tmp_path):
    server = Prometheus(cluster, tmp_path)
    try:
        wait_for(server.answers, 30, "prometheus to answer")
        yield server
    finally:
        server.stop()


def test_prometheus_fires_and_resolves_under_replicated_partitions(cluster, prometheus):
    started = time.monotonic()
    scraped = {p.name for p in cluster.processes.values() if p.metrics_port}

    def all_up():
        targets = prometheus.api("targets")["activeTargets"]
        return {t["labels"].get("process") for t in targets if t["health"] == "up"} == scraped

    wait_for(all_up, 30, "prometheus to scrape every process", interval_s=0.5)
    assert prometheus.alert_states(ALERT) == set()
    cluster.kill("broker-3")
    # Noticed when broker 3's session expires; pending first, firing once `for` has passed.
    wait_for(lambda: "firing" in prometheus.alert_states(ALERT), SESSION_MS / 1000 + FOR_S + 30,
             f"{ALERT} to fire", interval_s=0.5)
    fired = {a["labels"]["process"] for a in prometheus.api("alerts")["alerts"]
             if a["labels"]["alertname"] == ALERT and a["state"] == "firing"}
    assert fired <= {"broker-1", "broker-2"} and fired, fired
    cluster.start("broker-3")
    cluster.wait_healthy(["broker-3"], 60)
    wait_for(lambda: prometheus.alert_states(ALERT) == set(), 60, f"{ALERT} to resolve", interval_s=0.5)
    print(f"{ALERT}: fired and resolved in {time.monotonic() - started:.1f} s")
