"""Shared fixtures: real ZooKeeper and real service processes on loopback.

`cluster_factory` starts a LocalCluster (the same code as `make up`) in a
temporary state directory and always tears it down, also when a test fails.
When a test fails, the last lines of every process's log are attached to the
report, so the failure shows what each service said, and so is a stack dump of
every service process that does not answer its health check: what it was stuck on.

Clusters run with mutual TLS, as `make up` does. Every cluster of the session is signed by one CA,
and the environment names an operator certificate of that CA (REPLOG_TLS_*), so the client library
and the CLI started by a test call any of them without further arguments; `cluster.channel(address)`
opens a channel with the cluster's own operator certificate.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from replog.common.security import local
from replog.common.security.certificates import issue, new_authority
from replog.devcluster import ClusterSpec, LocalCluster
from replog.devcluster.tls import CA_DIR_ENV

REPO = Path(__file__).resolve().parent.parent
_live_clusters: list[LocalCluster] = []

# Property tests assert behaviour, not speed: on a busy machine one example can outlast Hypothesis's
# default 200 ms deadline, and the test would fail for the machine's load alone (benchmarks time things).
settings.register_profile("replog", deadline=None)
settings.load_profile("replog")


@pytest.fixture(scope="session", autouse=True)
def session_certificates(tmp_path_factory):
    """The session's CA (every cluster's certificates are signed by it) and an operator certificate
    in the environment, for the clients tests start."""
    directory = tmp_path_factory.mktemp("session-ca")
    operator = issue(new_authority(directory), local.OPERATOR, directory)
    values = {CA_DIR_ENV: str(directory), local.ENV_CA: operator.ca_file, local.ENV_CERT: operator.cert_file,
              local.ENV_KEY: operator.key_file}
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    yield directory
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and _live_clusters:
        for cluster in _live_clusters:
            for name in cluster.processes:
                report.sections.append((f"log of {name} ({cluster.state_dir.name})", cluster.tail(name, 30)))
            for name, stacks in _stacks_of_unhealthy(cluster):
                report.sections.append((f"threads of unhealthy {name} ({cluster.state_dir.name})", stacks))


def _stacks_of_unhealthy(cluster: LocalCluster):
    """(name, thread dump) of each running service process that fails its health check."""
    py_spy = Path(sys.executable).parent / "py-spy"
    for name, info in cluster.processes.items():
        if info.role == "zookeeper" or not cluster.is_running(name) or cluster.healthy(name):
            continue
        try:
            # Without suspending it: a thread stuck in the kernel (a stalled fsync) would hold the whole
            # process stopped for as long as the dump waits.
            dump = subprocess.run([str(py_spy), "dump", "--nonblocking", "--pid", str(info.pid)], capture_output=True,
                                  text=True, timeout=30)
            yield name, dump.stdout + dump.stderr
        except (OSError, subprocess.TimeoutExpired) as error:
            yield name, f"no dump: {error}"


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
        """Every cluster killed: the test is over and its clusters' state is not read again (an orderly
        stop cost about 2 s a cluster, brokers retrying a controlled shutdown while the controllers stop)."""
        for cluster in self.clusters:
            try:
                cluster.discard()
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


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory, session_certificates):
    """A real standalone ZooKeeper server on a free port with digest authentication, serving clients over TLS
    only (as `make up`'s), for adapter tests: its connect string, the TLS files clients reach it with (the
    session's operator certificate), and its credentials files (`credentials_file(name)`: super,
    controller-1, broker-1, broker-2, gateway-1)."""
    import subprocess
    import time

    from replog.devcluster import tls, zk_credentials, zookeeper
    from replog.devcluster.ports import free_port

    port = free_port()
    directory = tmp_path_factory.mktemp("zookeeper")
    tls.prepare(directory, [], str(session_certificates), zookeepers={"zookeeper": ""})
    client_tls = local.files_of(directory, local.OPERATOR)
    config = zookeeper.write_config(directory, port, tls=tls.zookeeper_server_tls(directory, "zookeeper"))
    # The identities of a small cluster (brokers 1 and 2), as `replog-local up` makes them.
    super_digest = zk_credentials.generate(directory, ["controller-1", "broker-1", "broker-2", "gateway-1"])
    log = open(config.parent / "zookeeper.log", "wb")
    process = subprocess.Popen(zookeeper.zookeeper_command(config, zk_credentials.zookeeper_jvm_args(super_digest)),
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not zookeeper.is_ok(port, tls=client_tls):
            assert process.poll() is None, "ZooKeeper exited during start-up"
            assert time.monotonic() < deadline, "ZooKeeper did not answer ruok within 30 s"
            time.sleep(0.1)
        yield ZooKeeperServer(f"127.0.0.1:{port}", zk_credentials.credentials_dir(directory), client_tls)
    finally:
        process.kill()
        process.wait()
        log.close()


class ZooKeeperServer:
    def __init__(self, connect: str, credentials_dir: Path, tls) -> None:
        self.connect = connect
        self.credentials_dir = credentials_dir
        self.tls = tls

    def credentials_file(self, name: str) -> Path:
        return self.credentials_dir / name

    def endpoint(self, chroot: str = "", name: str | None = "super"):
        """The server (under `chroot`) as process `name` would see it: with its credentials, or anonymous for None
        (over TLS either way)."""
        from replog.common.zk.auth import ZkEndpoint, load_credentials

        credentials = load_credentials(str(self.credentials_file(name))) if name else None
        return ZkEndpoint(self.connect + chroot, credentials, self.tls)


@pytest.fixture
def zk_client(zookeeper_server):
    """A connected ZkClient as ZooKeeper's super user, with the layout created (and its root claimed) under a
    fresh chroot, where its test's znodes live."""
    import uuid

    from kazoo.client import KazooClient

    from replog.common.zk.client import ZkClient

    chroot = f"/test-{uuid.uuid4().hex[:8]}"
    bootstrap = KazooClient(**zookeeper_server.endpoint().kazoo_args())
    bootstrap.start()
    bootstrap.ensure_path(chroot)
    bootstrap.stop()
    bootstrap.close()
    client = ZkClient(zookeeper_server.endpoint(chroot))
    client.start()
    client.ensure_layout()
    yield client
    client.stop()
