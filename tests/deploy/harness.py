"""What the deployment tests share: podman with the project's containers.conf, a client virtualenv made
from dist/'s client wheel outside the repository, and clients run in throwaway containers on a cluster's
network (the cluster's names resolve only there).

Everything made carries the run's name (`replog-deploy-<hex>`), so the finalizers remove exactly it, also
when a test fails: containers, pods, volumes, networks, and the temporary directories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = REPO / "deploy" / "image" / "containers.conf"
VERSION = tomllib.loads((REPO / "libs" / "common" / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"localhost/replog:{VERSION}"
ZOOKEEPER_IMAGE = "localhost/replog-zookeeper:3.8"
BASE_IMAGE = "localhost/replog-base:bookworm"  # clients run in it: no replog but the venv's
WORKLOAD = Path(__file__).resolve().parent / "workload.py"
SYSTEM_PYTHON = "/usr/bin/python3"  # install-deps.sh installs python3-venv
SESSION_TIMEOUT_S = 6.0  # the services' default zookeeper_session_timeout_ms


class DeployError(AssertionError):
    pass


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def podman(*args: str, check: bool = True, timeout: float = 300, input: str | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, env=podman_env(),
                          input=input)
    if check and done.returncode != 0:
        raise DeployError(f"podman {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def require_images() -> None:
    for image in (IMAGE, ZOOKEEPER_IMAGE, BASE_IMAGE):
        if podman("image", "exists", image, check=False).returncode != 0:
            raise DeployError(f"no image {image}: run `make image` (make test-deploy does)")


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 1.0):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise DeployError(f"timed out after {timeout_s:.0f} s waiting for {what}")


class ClientVenv:
    """A fresh virtualenv outside the repository with only dist/'s client wheel (and its PyPI dependencies)."""

    def __init__(self) -> None:
        wheels = sorted((REPO / "dist").glob(f"replog_client-{VERSION}-*.whl"))
        if len(wheels) != 1:
            raise DeployError(f"expected one client wheel of {VERSION} in dist/, found {wheels}: run make dist")
        self.scratch = Path(tempfile.mkdtemp(prefix="replog-deploy-client-"))
        self.path = self.scratch / "venv"
        # Debian's own interpreter, the base image's too: the venv then also runs in a container that mounts
        # it at the same path.
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(self.path)], check=True, timeout=120)
        done = subprocess.run([str(self.path / "bin" / "pip"), "install", "--quiet", str(wheels[0])],
                              capture_output=True, text=True, timeout=600, cwd=self.scratch,
                              env={k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))})
        if done.returncode != 0:
            raise DeployError(f"pip install {wheels[0].name}: {done.stderr}")
        self.replog = self.path / "bin" / "replog"
        self.python = self.path / "bin" / "python"

    def remove(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


class ClientRunner:
    """Runs the client venv's programs in a throwaway container on `network`, as user/admin."""

    def __init__(self, venv: ClientVenv, network: str, tls_dir: Path, work: Path, prefix: str,
                 bootstrap: list[str], gateway: str, stem: str = "user-admin") -> None:
        """`tls_dir` holds ca.pem and the operator's `<stem>.pem` / `<stem>.key`."""
        self.venv, self.network, self.tls_dir, self.work, self.prefix = venv, network, tls_dir, work, prefix
        self.stem = stem
        self.bootstrap, self.gateway = ",".join(bootstrap), gateway
        shutil.copyfile(WORKLOAD, work / "workload.py")
        self.started: list[str] = []

    def _command(self, name: str, program: list[str], detach: bool) -> list[str]:
        self.started.append(name)
        return ["run", *(["-d"] if detach else ["--rm"]), "--name", name, "--network", self.network,
                "-v", f"{self.venv.path}:{self.venv.path}:ro", "-v", f"{self.tls_dir}:/tls:ro",
                "-v", f"{self.work}:/work", "-e", "REPLOG_TLS_CA_FILE=/tls/ca.pem",
                "-e", f"REPLOG_TLS_CERT_FILE=/tls/{self.stem}.pem", "-e", f"REPLOG_TLS_KEY_FILE=/tls/{self.stem}.key",
                "-e", f"REPLOG_GATEWAY={self.gateway}", BASE_IMAGE, *program]

    def replog(self, *args: str, timeout: float = 120) -> dict:
        done = podman(*self._command(f"{self.prefix}-cli-{len(self.started)}",
                                     [str(self.venv.replog), "-o", "json", *args], False), timeout=timeout)
        return json.loads(done.stdout) if done.stdout.strip() else {}

    def workload(self, command: str, *args: str, detach: bool = False, timeout: float = 900):
        program = [str(self.venv.python), "/work/workload.py", command, "--bootstrap", self.bootstrap, *args]
        name = f"{self.prefix}-{command}-{len(self.started)}"
        done = podman(*self._command(name, program, detach), timeout=timeout)
        return name if detach else json.loads(done.stdout.strip().splitlines()[-1])

    def remove_containers(self) -> None:
        for name in self.started:
            podman("rm", "-f", "--ignore", name, check=False)


def volumes_of(containers: list[str]) -> set[str]:
    """The named and anonymous volumes mounted by `containers`, to remove with them."""
    found = set()
    for name in containers:
        done = podman("inspect", "--format", "{{range .Mounts}}{{if eq .Type \"volume\"}}{{.Name}} {{end}}{{end}}",
                      name, check=False)
        found.update(done.stdout.split())
    return found


def leader_of(client: ClientRunner, topic: str, partition: int = 0, timeout_s: float = 120) -> int:
    """The partition's leader as the gateway tells it; a gateway too busy to answer in time (a loaded
    host) is asked again until `timeout_s`."""
    errors: list[str] = []

    def ask():
        try:
            described = client.replog("topics", "describe", topic)
        except DeployError as exc:
            errors.append(str(exc)[-200:])
            return None
        for found in described["topics"][0]["partitions"]:
            if found["partition"] == partition:
                return (found["leader"],)  # a tuple: broker 0 leads too
        raise DeployError(f"{topic}-{partition} is not described: {described}")

    try:
        return wait_until(ask, timeout_s, f"the gateway to describe {topic}", interval_s=2)[0]
    except DeployError as exc:
        raise DeployError(f"{exc}; last errors: {errors[-3:]}") from None


def create_topic(client: ClientRunner, topic: str, timeout_s: float = 120) -> int:
    """One partition, 3 replicas, min.insync.replicas=2; returns its first leader, once the gateway names
    one (a producer started before the brokers know the topic is refused at once). A gateway too busy to
    answer in time (seen once on a host at load 8, right after every service was healthy) is asked again
    until `timeout_s`, as a user would: "already exists" then means an earlier request went through."""
    errors: list[str] = []

    def ask():
        try:
            client.replog("topics", "create", topic, "--partitions", "1", "--replication-factor", "3",
                          "--config", "min.insync.replicas=2")
        except DeployError as exc:
            if errors and "already exists" in str(exc):
                return True
            if "did not answer in time" not in str(exc):
                raise
            errors.append(str(exc)[-200:])
            return None
        return True

    try:
        wait_until(ask, timeout_s, f"the gateway to create {topic}", interval_s=2)
    except DeployError as exc:
        raise DeployError(f"{exc}; last errors: {errors[-3:]}") from None
    return wait_until(lambda: (lambda leader: (leader,) if leader >= 0 else None)(leader_of(client, topic)), 120,
                      f"{topic} to have a leader")[0]


def failover_check(client: ClientRunner, topic: str, first: int, kill_leader, seconds: float) -> dict:
    """Writes one record at a time through a kill of `topic`-0's leader (`kill_leader(broker_id)` kills its
    container); returns when writes resumed after the kill, and the values acknowledged."""
    out = client.work / "steady.jsonl"
    name = client.workload("steady", "--topic", topic, "--seconds", str(seconds), "--first", str(first),
                           "--out", "/work/steady.jsonl", detach=True)
    wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 50, 120, "writes before the kill")
    leader = leader_of(client, topic)
    killed_at = time.time()
    kill_leader(leader)
    podman("wait", name, timeout=seconds + 300)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    podman("rm", "-f", name, check=False)
    acked = [line for line in lines if "acked_at" in line]
    # `podman kill` takes a moment to land, and a record in flight may still be answered by the dying
    # leader: the outage is the longest pause between two acknowledgements once the kill was asked for,
    # from the dead leader's last answer to the new leader's first.
    times = [line["acked_at"] for line in acked]
    gaps = [(b - a, a, b) for a, b in zip(times, times[1:]) if b >= killed_at]
    if not gaps:
        raise DeployError(f"no record was acknowledged after the leader (broker {leader}) was killed")
    outage_s, stopped_at, resumed_at = max(gaps)
    new_leader = leader_of(client, topic)
    if new_leader in (leader, -1):
        raise DeployError(f"{topic}-0 is still led by {new_leader} after broker {leader} was killed")
    return {"killed_broker": leader, "new_leader": new_leader, "writes_stopped_for_s": round(outage_s, 3),
            "last_ack_before_s": round(stopped_at - killed_at, 3), "first_ack_after_s": round(resumed_at - killed_at, 3),
            "acked_values": [line["value"] for line in acked],
            "failed": sum(1 for line in lines if "failed" in line)}
