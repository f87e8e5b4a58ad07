"""Start, stop, inspect and disturb a local cluster of real processes.

State lives in one directory (default `.state/` in the checkout): `cluster.json`
records every process's command, ports and PID; `logs/<name>.log` holds its
output; `data/<name>/` its files; `traces/` the span files. Ports are chosen
once (free ports on 127.0.0.1) and kept, so a restarted process comes back
where its peers expect it. Starting twice is harmless: a process that is
already running is left alone.

With `ClusterSpec.hosts`, each process runs on a host of its own instead: a network
namespace with its own address and fixed ports (hosts.py, netns.py), made when the
cluster is planned and removed by `down` (a later `up` makes it again, same names and
addresses); `network` is then the HostNetwork.
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

from replog.common import ports
from replog.common.security.credentials import open_channel
from replog.common.zk.auth import ZkEndpoint
from replog.devcluster import tls, zk_credentials, zookeeper
from replog.devcluster.hosts import SERVICE_PORTS, HostLayout
from replog.devcluster.netns import HostNetwork
from replog.devcluster.ports import free_port
from replog.devcluster.spec import ClusterError, ClusterSpec, ProcessInfo


class LocalCluster:
    def __init__(self, state_dir: Path | str, spec: ClusterSpec | None = None, owner_pid: int | None = None) -> None:
        self.state_dir = Path(state_dir).resolve()
        self.spec = spec or ClusterSpec()
        servers = self.spec.zookeeper_servers
        if servers < 1 or servers % 2 == 0:
            raise ClusterError(f"zookeeper_servers must be 1 or an odd number, so that a majority can survive a "
                               f"server's death (3 survives one), not {servers}")
        self.state_file = self.state_dir / "cluster.json"
        self.processes: dict[str, ProcessInfo] = {}
        self._children: dict[str, subprocess.Popen] = {}
        # The multi-host layout: the process whose exit makes this cluster's network a leftover that the next
        # cluster removes (default: this one; 0: none, the network lasts until `down`, as replog-local's).
        self.owner_pid = os.getpid() if owner_pid is None else owner_pid
        self._layout: HostLayout | None = None  # the names and subnet the processes were planned with
        self.network: HostNetwork | None = None
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

    def broker_log_dirs(self, name: str, count: int) -> list[Path]:
        """A broker's log directories: its data directory, or `count` of them inside it."""
        return [self.data_dir(name)] if count <= 1 else [self.data_dir(name) / f"dir-{i}" for i in range(1, count + 1)]

    def _log_dir_args(self, name: str, spec: ClusterSpec) -> list[str]:
        if spec.broker_log_dirs <= 1:
            return ["--log-dir", str(self.data_dir(name))]
        return ["--log-dirs", ",".join(str(d) for d in self.broker_log_dirs(name, spec.broker_log_dirs))]

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    @property
    def zookeeper_connect(self) -> str:
        """The connect string of every ZooKeeper server (`h1:p1,h2:p2,h3:p3` for an ensemble)."""
        return ",".join(p.address for p in self.of_role("zookeeper"))

    @property
    def zookeeper_names(self) -> list[str]:
        return [p.name for p in self.of_role("zookeeper")]

    @property
    def operator_tls(self):
        """The operator's TLS files (replog://user/admin), None for an insecure cluster: for tools and tests."""
        return tls.operator_files(self.state_dir)

    def client_env(self, base=None) -> dict[str, str]:
        """The environment a tool started for this cluster (the CLI, a benchmark's client process) needs to
        call it as its operator: this cluster's own TLS files, or plaintext for an insecure cluster; never
        another cluster's, such as `.state/`'s from an earlier `make up` (security/local.py's order)."""
        from replog.common.security import local

        env = {k: v for k, v in (os.environ if base is None else base).items()
               if k not in (local.ENV_CA, local.ENV_CERT, local.ENV_KEY, local.ENV_INSECURE)}
        files = self.operator_tls
        env.update({local.ENV_INSECURE: "true"} if files is None else
                   {local.ENV_CA: files.ca_file, local.ENV_CERT: files.cert_file, local.ENV_KEY: files.key_file})
        return env

    def channel(self, address: str, options=()) -> grpc.Channel:
        """A channel to `address` as the operator (TLS unless the cluster is insecure)."""
        return open_channel(address, self.operator_tls, options)

    @property
    def zookeeper_tls(self):
        """The operator's TLS files when ZooKeeper serves clients over TLS, else None (plaintext)."""
        return self.operator_tls if any(p.tls for p in self.of_role("zookeeper")) else None

    @property
    def zookeeper_endpoint(self) -> ZkEndpoint:
        """ZooKeeper as its super user (anonymous when the cluster runs without authentication), over TLS with the
        operator's certificate when ZooKeeper has TLS, for tools and tests."""
        return zk_credentials.super_endpoint(self.state_dir, self.zookeeper_connect, self.zookeeper_tls)

    def zookeeper_word(self, name: str, word: str) -> str | None:
        """ZooKeeper server `name`'s answer to a four-letter word (srvr, cons, ...), None when it does not answer."""
        info = self.processes[name]
        return zookeeper.four_letter_word(info.host, info.port, word, tls=self.zookeeper_tls)

    @property
    def gateway_address(self) -> str:
        return self.processes["gateway-1"].address

    def of_role(self, role: str) -> list[ProcessInfo]:
        return sorted((p for p in self.processes.values() if p.role == role), key=lambda p: p.instance_id)

    def _load(self) -> None:
        raw = json.loads(self.state_file.read_text())
        self.processes = {name: ProcessInfo(**info) for name, info in raw["processes"].items()}
        self._layout = HostLayout(**raw["network"]) if raw.get("network") else None
        self.network = HostNetwork.load(self.state_dir) if self._layout else None

    def _save(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        network = asdict(self._layout) if self._layout else None
        tmp.write_text(json.dumps({"processes": {n: asdict(p) for n, p in self.processes.items()}, "network": network},
                                  indent=2))
        tmp.replace(self.state_file)

    def _plan(self) -> None:
        """Choose ports and commands once; kept across restarts."""
        if self.processes:
            return
        try:
            self._plan_processes()
        except BaseException:
            if self.network is not None:  # made for processes that will never run
                self.network.destroy()
                self.network, self._layout, self.processes = None, None, {}
            raise

    def _plan_processes(self) -> None:
        spec = self.spec
        zk_names = (["zookeeper"] if spec.zookeeper_servers == 1
                    else [f"zookeeper-{i}" for i in range(1, spec.zookeeper_servers + 1)])
        names = [*zk_names, *(f"{role}-{i}" for role, count in (("controller", spec.controllers),
                 ("broker", spec.brokers), ("gateway", spec.gateways)) for i in range(1, count + 1))]
        if spec.hosts:
            self.network = HostNetwork.create(self.state_dir, names, self.owner_pid)
            self._layout = self.network.layout
        zk_jvm_args, zk_auth = zk_credentials.plan(self.state_dir, spec)
        zk_tls = spec.zookeeper_tls and not spec.insecure
        self._plan_tls(zk_names if zk_tls else [])
        self._plan_zookeeper(zk_names, zk_jvm_args, zk_tls)
        bin_dir = Path(sys.executable).parent
        tls_args = lambda role, i: tls.service_args(self.state_dir, role, i, spec.insecure, zk_tls)  # noqa: E731
        common = ["--zookeeper", self.zookeeper_connect, "--trace-dir", str(self.trace_dir),
                  "--zookeeper-session-timeout-ms", str(spec.zookeeper_session_timeout_ms)]
        for role, count in (("controller", spec.controllers), ("broker", spec.brokers), ("gateway", spec.gateways)):
            for i in range(1, count + 1):
                name = f"{role}-{i}"
                host, port, metrics, namespace = self._place(name, role)
                rack = spec.racks[(i - 1) % len(spec.racks)] if role == "broker" and spec.racks else ""
                kafka_port = (ports.BROKER_KAFKA if namespace else free_port()) if role == "broker" else 0
                own = {"controller": ["--controller-id", str(i)], "gateway": ["--gateway-id", str(i)],
                       "broker": ["--broker-id", str(i), "--rack", rack, "--kafka-port", str(kafka_port),
                                  *self._log_dir_args(name, spec)]}
                self.processes[name] = ProcessInfo(
                    name, role, i, port, metrics,
                    [str(bin_dir / f"replog-{role}"), *own[role], "--port", str(port), "--metrics-port", str(metrics),
                     "--host", host, *common, *tls_args(role, i), *zk_auth(name), *spec.extra_args.get(role, [])],
                    rack=rack, host=host, namespace=namespace, kafka_port=kafka_port,
                )
        self._save()

    def _plan_zookeeper(self, names: list[str], jvm_args: list[str], with_tls: bool) -> None:
        """One standalone server `zookeeper`, or an ensemble `zookeeper-1..N`, each with its own ports (on
        its own host in the multi-host layout, where every server uses the same well-known ports); with
        `with_tls`, each serves clients on a TLS port only (zookeeper.py)."""
        ensemble = len(names) > 1
        servers, places = [], {}
        for i, name in enumerate(names, start=1):
            host, port, _, namespace = places[name] = self._place(name, "zookeeper")
            quorum, election = ((0, 0) if not ensemble else (zookeeper.QUORUM_PORT, zookeeper.ELECTION_PORT)
                                if namespace else (free_port(), free_port()))
            servers.append(zookeeper.ServerAddress(i, host, port, quorum, election))
        for server, name in zip(servers, names):
            server_tls = tls.zookeeper_server_tls(self.state_dir, name) if with_tls else None
            config = zookeeper.write_server_config(self.state_dir / name, server.server_id, servers,
                                                    force_sync=self.spec.zookeeper_force_sync, tls=server_tls,
                                                    session_timeout_ms=self.spec.zookeeper_session_timeout_ms)
            host, port, _, namespace = places[name]
            self.processes[name] = ProcessInfo(name, "zookeeper", server.server_id if ensemble else 0, port, 0,
                                               zookeeper.zookeeper_command(config, jvm_args,
                                                                           self.spec.zookeeper_heap_mb),
                                               host=host, namespace=namespace, tls=with_tls)

    def _plan_tls(self, zookeepers: list[str]) -> None:
        """The certificates of every service process, the operator and the ZooKeeper servers `zookeepers`."""
        spec = self.spec
        if spec.insecure:
            tls.mark_insecure(self.state_dir)
            return
        processes = [(role, str(i)) for role, count in (("controller", spec.controllers), ("broker", spec.brokers),
                                                         ("gateway", spec.gateways)) for i in range(1, count + 1)]
        addresses = {(role, i): self.network.address(f"{role}-{i}") for role, i in processes} if self.network else {}
        zk_addresses = {name: self.network.address(name) if self.network else "" for name in zookeepers}
        tls.prepare(self.state_dir, processes, spec.ca_dir, addresses, zk_addresses)

    def _place(self, name: str, role: str) -> tuple[str, int, int, str]:
        """Where process `name` listens: (host, port, metrics port, network namespace)."""
        if self.network is None:
            return "127.0.0.1", free_port(), (free_port() if role != "zookeeper" else 0), ""
        port, metrics = SERVICE_PORTS[role]
        return self.network.address(name), port, metrics, self.network.namespace(name)

    def _ensure_network(self) -> None:
        """Make the cluster's network again (same names and addresses) when `down` removed it."""
        if self._layout is not None and (self.network is None or not self.network.exists()):
            self.network = HostNetwork.create(self.state_dir, list(self.processes), self.owner_pid, self._layout)

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
                self.processes, self._layout = {}, None
                if self.state_file.exists():
                    self.state_file.unlink()

    def write_prometheus_targets(self) -> Path:
        """Every process's /metrics endpoint, in Prometheus' file_sd_configs format."""
        targets = [{"targets": [f"{p.host}:{p.metrics_port}"], "labels": {"role": p.role, "process": p.name}}
                   for p in self.processes.values() if p.metrics_port]
        path = self.state_dir / "prometheus-targets.json"
        path.write_text(json.dumps(targets, indent=2))
        return path

    def _start_all(self, timeout_s: float) -> None:
        """ZooKeeper first, the services at once after it: each service waits for ZooKeeper by itself
        (it retries the connection), so the JVM's start and the services' imports overlap instead of
        following each other (about 2 s less a cluster on two cores)."""
        servers = self.zookeeper_names
        for name in servers:
            self.start(name)
        names = [n for n, p in self.processes.items() if p.role != "zookeeper"]
        for name in names:
            self.start(name)
        self.wait_healthy([*servers, *names], timeout_s)

    def start(self, name: str) -> None:
        info = self.processes[name]
        if self.is_running(name):
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.trace_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.spec.env, "PYTHONUNBUFFERED": "1"}
        command = info.command
        open_files_max = self.spec.open_files_max.get(info.role)
        if open_files_max:  # prlimit sets the limit and execs the command: the PID stays the same
            command = ["prlimit", f"--nofile={open_files_max}:{open_files_max}", "--", *command]
        if info.namespace:  # `ip netns exec` enters the namespace and execs the command: the PID stays the same
            self._ensure_network()
            command = ["ip", "netns", "exec", info.namespace, *command]
        with open(self.log_path(name), "ab") as log:
            log.write(f"--- starting {name} at {time.strftime('%H:%M:%S')}: {' '.join(command)}\n".encode())
            log.flush()
            child = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
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
        if info.role == "zookeeper":  # serving clients: standalone, or an ensemble member with a quorum
            return zookeeper.mode(info.host, info.port, self.zookeeper_tls) is not None
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
        for name in self.zookeeper_names:
            if self.is_running(name):
                self.signal(name, signal.SIGTERM)
        for name in self.zookeeper_names:
            if not self._reap(name, timeout_s=10):
                self.signal(name, signal.SIGKILL)
                self._reap(name, timeout_s=5)
        if self.network is not None:
            self.network.destroy()
            self.network = None

    def discard(self) -> None:
        """kill -9 every process at once, then remove the cluster's network: for a cluster whose run is over
        and whose state nobody reads again (a test's teardown). `down` is the orderly stop; here no broker
        waits out a controlled shutdown that a controller stopping beside it can no longer answer."""
        for name in self.processes:
            self.signal(name, signal.SIGKILL)
        for name in self.processes:
            self._reap(name, timeout_s=10)
        if self.network is not None:
            self.network.destroy()
            self.network = None

    def status(self) -> list[dict]:
        rows = []
        for name, info in self.processes.items():
            running = self.is_running(name)
            rows.append({
                "name": name, "role": info.role, "pid": info.pid if running else None,
                "address": info.address, "metrics_port": info.metrics_port or None,
                "kafka_port": info.kafka_port or None,
                "rack": info.rack or None, "running": running, "healthy": running and self.healthy(name),
            })
        return rows

    def tail(self, name: str, lines: int = 40) -> str:
        path = self.log_path(name)
        if not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
