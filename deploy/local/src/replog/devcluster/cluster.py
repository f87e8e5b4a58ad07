"""Start, stop, inspect and disturb a local cluster of real processes.

State lives in one directory (default `.state/` in the checkout): `cluster.json`
records every process's command, ports and PID; `logs/<name>.log` holds its
output; `data/<name>/` its files; `traces/` the span files. Ports are chosen
once (free ports on 127.0.0.1) and kept, so a restarted process comes back
where its peers expect it. Starting twice is harmless: a process that is
already running is left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.common.security.credentials import open_channel
from replog.common.zk.auth import ZkEndpoint
from replog.devcluster import tls, zk_credentials, zookeeper
from replog.devcluster.ports import free_port
from replog.devcluster.spec import ClusterError, ClusterSpec, ProcessInfo


class LocalCluster:
    def __init__(self, state_dir: Path | str, spec: ClusterSpec | None = None) -> None:
        self.state_dir = Path(state_dir).resolve()
        self.spec = spec or ClusterSpec()
        self.state_file = self.state_dir / "cluster.json"
        self.processes: dict[str, ProcessInfo] = {}
        self._children: dict[str, subprocess.Popen] = {}
        if self.state_file.exists():
            self._load()

    # --- layout -------------------------------------------------------------------

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def trace_dir(self) -> Path:
        return self.state_dir / "traces"

    def data_dir(self, name: str) -> Path:
        return self.state_dir / "data" / name

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    @property
    def zookeeper_connect(self) -> str:
        return self.processes["zookeeper"].address

    @property
    def operator_tls(self):
        """The operator's TLS files (replog://user/admin), None for an insecure cluster: for tools and tests."""
        return tls.operator_files(self.state_dir)

    def channel(self, address: str, options=()) -> grpc.Channel:
        """A channel to `address` as the operator (TLS unless the cluster is insecure)."""
        return open_channel(address, self.operator_tls, options)

    @property
    def zookeeper_endpoint(self) -> ZkEndpoint:
        """ZooKeeper as its super user (anonymous when the cluster runs without authentication), for tools and tests."""
        return zk_credentials.super_endpoint(self.state_dir, self.zookeeper_connect)

    @property
    def gateway_address(self) -> str:
        return self.processes["gateway-1"].address

    def of_role(self, role: str) -> list[ProcessInfo]:
        return sorted((p for p in self.processes.values() if p.role == role), key=lambda p: p.instance_id)

    def _load(self) -> None:
        raw = json.loads(self.state_file.read_text())
        self.processes = {name: ProcessInfo(**info) for name, info in raw["processes"].items()}

    def _save(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"processes": {n: asdict(p) for n, p in self.processes.items()}}, indent=2))
        tmp.replace(self.state_file)

    def _plan(self) -> None:
        """Choose ports and commands once; kept across restarts."""
        if self.processes:
            return
        spec = self.spec
        zk_port = free_port()
        zk_config = zookeeper.write_config(self.state_dir / "zookeeper", zk_port,
                                           force_sync=spec.zookeeper_force_sync)
        zk_jvm_args, zk_auth = zk_credentials.plan(self.state_dir, spec)
        self.processes["zookeeper"] = ProcessInfo(
            "zookeeper", "zookeeper", 0, zk_port, 0, zookeeper.zookeeper_command(zk_config, zk_jvm_args)
        )
        connect = f"127.0.0.1:{zk_port}"
        bin_dir = Path(sys.executable).parent
        self._plan_tls()
        tls_args = lambda role, i: tls.service_args(self.state_dir, role, i, spec.insecure)  # noqa: E731
        common = ["--zookeeper", connect, "--host", "127.0.0.1", "--trace-dir", str(self.trace_dir),
                  "--zookeeper-session-timeout-ms", str(spec.zookeeper_session_timeout_ms)]
        for i in range(1, spec.controllers + 1):
            port, metrics = free_port(), free_port()
            self.processes[f"controller-{i}"] = ProcessInfo(
                f"controller-{i}", "controller", i, port, metrics,
                [str(bin_dir / "replog-controller"), "--controller-id", str(i), "--port", str(port),
                 "--metrics-port", str(metrics), *common, *tls_args("controller", i), *zk_auth(f"controller-{i}"),
                 *spec.extra_args.get("controller", [])],
            )
        for i in range(1, spec.brokers + 1):
            port, metrics = free_port(), free_port()
            rack = spec.racks[(i - 1) % len(spec.racks)] if spec.racks else ""
            self.processes[f"broker-{i}"] = ProcessInfo(
                f"broker-{i}", "broker", i, port, metrics,
                [str(bin_dir / "replog-broker"), "--broker-id", str(i), "--port", str(port),
                 "--metrics-port", str(metrics), "--rack", rack, "--log-dir", str(self.data_dir(f"broker-{i}")),
                 *common, *tls_args("broker", i), *zk_auth(f"broker-{i}"), *spec.extra_args.get("broker", [])],
                rack=rack,
            )
        for i in range(1, spec.gateways + 1):
            port, metrics = free_port(), free_port()
            self.processes[f"gateway-{i}"] = ProcessInfo(
                f"gateway-{i}", "gateway", i, port, metrics,
                [str(bin_dir / "replog-gateway"), "--gateway-id", str(i), "--port", str(port),
                 "--metrics-port", str(metrics), *common, *tls_args("gateway", i), *zk_auth(f"gateway-{i}"),
                 *spec.extra_args.get("gateway", [])],
            )
        self._save()

    def _plan_tls(self) -> None:
        spec = self.spec
        if spec.insecure:
            tls.mark_insecure(self.state_dir)
            return
        tls.prepare(self.state_dir, [(role, str(i)) for role, count in
                                     (("controller", spec.controllers), ("broker", spec.brokers),
                                      ("gateway", spec.gateways)) for i in range(1, count + 1)], spec.ca_dir)

    # --- lifecycle ------------------------------------------------------------------

    def is_running(self, name: str) -> bool:
        info = self.processes.get(name)
        if info is None or info.pid <= 0:
            return False
        child = self._children.get(name)
        if child is not None and child.poll() is not None:
            return False
        try:
            cmdline = Path(f"/proc/{info.pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{info.pid}/stat").read_text()
        except OSError:
            return False
        if stat.rsplit(")", 1)[1].split()[0] == "Z":  # a zombie is not running
            return False
        if cmdline == [b""] or not cmdline:
            # A process between fork and exec shows an empty cmdline for a moment.
            child = self._children.get(name)
            return child is not None and child.poll() is None
        # Guard against a recycled PID: the command must be ours (a script's
        # cmdline starts with its interpreter, so look for the path anywhere).
        return info.command[0].encode() in cmdline

    def up(self, timeout_s: float = 60.0) -> None:
        """Start every process that is not running and wait until all are healthy.

        Ports are chosen free, but another program may take one before our
        process binds it; on a cluster's first start that is retried with new
        ports (a restarted cluster keeps its ports, which its data refers to).
        """
        fresh = not self.processes
        for attempt in range(3):
            self._plan()
            try:
                self._start_all(timeout_s)
                self.write_prometheus_targets()
                return
            except ClusterError:
                if not fresh or attempt == 2:
                    raise
                self.down()
                self.processes = {}
                if self.state_file.exists():
                    self.state_file.unlink()

    def write_prometheus_targets(self) -> Path:
        """Every process's /metrics endpoint, in Prometheus' file_sd_configs format."""
        targets = [{"targets": [f"127.0.0.1:{p.metrics_port}"], "labels": {"role": p.role, "process": p.name}}
                   for p in self.processes.values() if p.metrics_port]
        path = self.state_dir / "prometheus-targets.json"
        path.write_text(json.dumps(targets, indent=2))
        return path

    def _start_all(self, timeout_s: float) -> None:
        self.start("zookeeper")
        self.wait_healthy(["zookeeper"], timeout_s)
        names = [n for n in self.processes if n != "zookeeper"]
        for name in names:
            self.start(name)
        self.wait_healthy(names, timeout_s)

    def start(self, name: str) -> None:
        info = self.processes[name]
        if self.is_running(name):
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.trace_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.spec.env, "PYTHONUNBUFFERED": "1"}
        with open(self.log_path(name), "ab") as log:
            log.write(f"--- starting {name} at {time.strftime('%H:%M:%S')}: {' '.join(info.command)}\n".encode())
            log.flush()
            child = subprocess.Popen(
                info.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, cwd=self.state_dir, start_new_session=True,
            )
        self._children[name] = child
        info.pid = child.pid
        self._save()

    def wait_healthy(self, names: list[str], timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        pending = list(names)
        while pending:
            for name in list(pending):
                if not self.is_running(name):
                    raise ClusterError(f"{name} exited during start-up; last lines of its log:\n{self.tail(name)}")
                if self.healthy(name):
                    pending.remove(name)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"not healthy after {timeout_s:g} s: {', '.join(pending)}")
            time.sleep(0.1)

    def healthy(self, name: str) -> bool:
        info = self.processes[name]
        if info.role == "zookeeper":
            return zookeeper.is_ok(info.port)
        try:
            with self.channel(info.address) as channel:
                reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1.0)
            return reply.status == health_pb2.HealthCheckResponse.SERVING
        except grpc.RpcError:
            return False

    def signal(self, name: str, signum: int) -> None:
        info = self.processes[name]
        if self.is_running(name):
            os.kill(info.pid, signum)

    def kill(self, name: str) -> None:
        """kill -9, and reap it so it is really gone before returning."""
        self.signal(name, signal.SIGKILL)
        self._reap(name, timeout_s=10)

    def stop(self, name: str, timeout_s: float = 20.0) -> None:
        """SIGTERM, then SIGKILL after `timeout_s`."""
        if not self.is_running(name):
            return
        self.signal(name, signal.SIGTERM)
        if not self._reap(name, timeout_s):
            self.signal(name, signal.SIGKILL)
            self._reap(name, timeout_s=10)

    def restart(self, name: str, timeout_s: float = 60.0) -> None:
        self.stop(name)
        self.start(name)
        self.wait_healthy([name], timeout_s)

    def _reap(self, name: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        child = self._children.get(name)
        while time.monotonic() < deadline:
            if child is not None and child.poll() is not None:
                return True
            if child is None and not self.is_running(name):
                return True
            time.sleep(0.05)
        return False

    def down(self) -> None:
        """Stop everything: services first (brokers last but one), ZooKeeper last."""
        order = [p.name for p in self.of_role("gateway")] + [p.name for p in self.of_role("controller")]
        order += [p.name for p in self.of_role("broker")]
        for name in order:
            if self.is_running(name):
                self.signal(name, signal.SIGTERM)
        for name in order:
            if not self._reap(name, timeout_s=15):
                self.signal(name, signal.SIGKILL)
                self._reap(name, timeout_s=5)
        if "zookeeper" in self.processes:
            self.stop("zookeeper", timeout_s=10)

    def status(self) -> list[dict]:
        rows = []
        for name, info in self.processes.items():
            running = self.is_running(name)
            rows.append({
                "name": name, "role": info.role, "pid": info.pid if running else None,
                "address": info.address, "metrics_port": info.metrics_port or None,
                "rack": info.rack or None, "running": running, "healthy": running and self.healthy(name),
            })
        return rows

    def tail(self, name: str, lines: int = 40) -> str:
        path = self.log_path(name)
        if not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
