"""Shared fixtures: real ZooKeeper and real service processes on loopback.

`cluster_factory` starts a LocalCluster (the same code as `make up`) in a
temporary state directory and always tears it down, also when a test fails.
When a test fails, the last lines of every process's log are attached to the
report, so the failure shows what each service said.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from replog.devcluster import ClusterSpec, LocalCluster

REPO = Path(__file__).resolve().parent.parent
_live_clusters: list[LocalCluster] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and _live_clusters:
        for cluster in _live_clusters:
            for name in cluster.processes:
                report.sections.append((f"log of {name} ({cluster.state_dir.name})", cluster.tail(name, 30)))


class ClusterFactory:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.clusters: list[LocalCluster] = []

    def __call__(self, spec: ClusterSpec | None = None, *, start: bool = True, name: str | None = None) -> LocalCluster:
        state_dir = self.base / (name or f"cluster-{len(self.clusters) + 1}")
        cluster = LocalCluster(state_dir, spec or ClusterSpec())
        self.clusters.append(cluster)
        _live_clusters.append(cluster)
        if start:
            cluster.up()
        return cluster

    def teardown(self) -> None:
        for cluster in self.clusters:
            try:
                cluster.down()
            finally:
                for name in list(cluster.processes):
                    if cluster.is_running(name):
                        os.kill(cluster.processes[name].pid, signal.SIGKILL)
                _live_clusters.remove(cluster)


@pytest.fixture
def cluster_factory(tmp_path):
    factory = ClusterFactory(tmp_path)
    yield factory
    factory.teardown()


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory):
    """One default cluster (ZooKeeper, 2 controllers, 3 brokers in racks a/b/c, 1 gateway) per test module."""
    factory = ClusterFactory(tmp_path_factory.mktemp("shared"))
    cluster = factory()
    yield cluster
    factory.teardown()


@pytest.fixture
def venv_bin() -> Path:
    import sys

    return Path(sys.executable).parent
