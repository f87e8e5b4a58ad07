"""Shared pieces of the benchmarks: a throwaway local cluster, fast topic
creation, waiting on ZooKeeper, the ZooKeeper `multi` floor, span files and
CPU seconds per process.

Every benchmark prints one JSON object as the last line of standard output and
measures the relevant floor in the same run, so ratios hold on a noisy machine.

A cluster runs with mutual TLS unless its spec says `insecure`, as `make up` does. While it runs,
`local_cluster` points the environment (REPLOG_TLS_*, or REPLOG_INSECURE) at its operator
certificate, so the client library and the CLI in the benchmark call it as they would any cluster;
`channels(cluster)` and `hosted` use the same certificate.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from replog.common.channels import ChannelCache
from replog.common.security import local
from replog.common.security.credentials import open_channel
from replog.common.zk import bulk, schema
from replog.common.zk.auth import ZkEndpoint
from replog.common.zk.client import ZkClient
from replog.devcluster import ClusterSpec, LocalCluster

import floor_fdatasync  # noqa: E402 - bench/ is on sys.path for every script that imports this module

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S  # utime + stime


def cpu_by_process(cluster, own_name: str) -> dict[str, float]:
    """CPU seconds of every cluster process so far, and of this benchmark process as `own_name`."""
    found = {name: cpu_seconds(info.pid) for name, info in cluster.processes.items()}
    found[own_name] = cpu_seconds(os.getpid())
    return found


def cpu_used(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per process between two readings; a process that died in between counts 0."""
    return {name: round(max(after[name] - before.get(name, 0.0), 0.0), 2) for name in sorted(after)}


class CpuSampler:
    """Samples `cpu_by_process` every `interval_s` on a thread, so the CPU each process used in a
    window known only afterwards (say, from trace spans) can be read off: `used_between`."""

    def __init__(self, cluster, own_name: str, interval_s: float = 0.1) -> None:
        self._cluster, self._own_name, self._interval_s = cluster, own_name, interval_s
        self._samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> "CpuSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self._samples.append((time.time(), cpu_by_process(self._cluster, self._own_name)))
            if self._stop.wait(self._interval_s):
                self._samples.append((time.time(), cpu_by_process(self._cluster, self._own_name)))
                return

    def used_between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds per process from the last sample at or before `start` (wall-clock seconds)
        to the first at or after `end`: the window, widened by at most one interval each side."""
        before = [cpu for at, cpu in self._samples if at <= start] or [self._samples[0][1]]
        after = [cpu for at, cpu in self._samples if at >= end] or [self._samples[-1][1]]
        return cpu_used(before[-1], after[0])


def note(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def emit(result: dict) -> None:
    print(json.dumps(result, sort_keys=True))


@contextmanager
def local_cluster(spec: ClusterSpec, keep: bool = False):
    state_dir = Path(tempfile.mkdtemp(prefix="replog-bench-"))
    cluster = LocalCluster(state_dir, spec)
    saved = {name: os.environ.pop(name, None) for name in (local.ENV_CA, local.ENV_CERT, local.ENV_KEY,
                                                           local.ENV_INSECURE)}
    try:
        cluster.up(timeout_s=120)
        # This process and every client process it starts call this cluster with its own files.
        env = cluster.client_env()
        os.environ.update({name: env[name] for name in saved if name in env})
        yield cluster
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
        cluster.down()
        if not keep:
            shutil.rmtree(state_dir, ignore_errors=True)


def rotating_assignment(partitions: int, brokers: list[int], replication_factor: int) -> dict[int, tuple[int, ...]]:
    """Replica lists whose leaders rotate over the brokers (a third each on three)."""
    n = len(brokers)
    return {p: tuple(brokers[(p + i) % n] for i in range(replication_factor)) for p in range(partitions)}


def create_topic(zk: ZkClient, topic: str, assignment: dict[int, tuple[int, ...]], config: dict | None = None) -> None:
    """As the gateway does: config and assignment in one transaction."""
    tx = zk.kazoo.transaction()
    tx.create(schema.topic_config_path(topic), schema.TopicConfigRecord(config or {}).encode())
    tx.create(schema.topic_path(topic), schema.TopicAssignment(assignment).encode())
    results = tx.commit()
    if any(isinstance(r, Exception) for r in results):
        raise RuntimeError(f"creating {topic} failed: {results}")


def set_topic_config(connect: ZkEndpoint, topic: str, config: dict) -> None:
    """As the gateway's AlterTopicConfigs does: the topic's config znode rewritten; brokers apply it live."""
    zk = ZkClient(connect)
    zk.start()
    try:
        zk.kazoo.set(schema.topic_config_path(topic), schema.TopicConfigRecord(config).encode())
    finally:
        zk.stop()


def metric_by_broker(cluster, name: str) -> dict[str, float]:
    """One unlabelled sample of metric `name` from every broker's /metrics (0 when absent)."""
    import urllib.request

    found = {}
    for process in cluster.of_role("broker"):
        text = urllib.request.urlopen(f"http://{process.host}:{process.metrics_port}/metrics", timeout=10).read()
        values = [float(line.split()[-1]) for line in text.decode().splitlines() if line.startswith(name + " ")]
        found[process.name] = values[0] if values else 0.0
    return found


def drain_writeback(timeout_s: float, settled_kb: int = 65536) -> float:
    """Wait until the kernel's dirty and under-writeback pages are below `settled_kb` (so that a run does not
    measure the previous one's writeback); the seconds it took."""
    started = time.monotonic()

    def settled() -> bool:
        with open("/proc/meminfo") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo)
        return int(fields["Dirty"].split()[0]) + int(fields["Writeback"].split()[0]) < settled_kb

    wait_until(settled, timeout_s, "the kernel's writeback to drain", 0.5)
    return time.monotonic() - started


def wait_for_disk(directory: Path, syncs_per_s_min: float, timeout_s: float, probe_s: float = 1.0) -> dict:
    """Wait until a short write + fdatasync loop on `directory` reaches `syncs_per_s_min` (after a run
    with many files the disk stays slow for minutes after the kernel's own writeback drained, which
    `drain_writeback` cannot see); {"waited_s", "probe_syncs_per_s"} of the probe that passed."""
    started = time.monotonic()
    last: dict = {}

    def fast_enough() -> bool:
        last.update(floor_fdatasync.floor_fdatasync(directory, 4096, seconds=probe_s))
        return last["syncs_per_s"] >= syncs_per_s_min

    wait_until(fast_enough, timeout_s, f"the disk to reach {syncs_per_s_min:g} fdatasyncs/s", 2.0)
    return {"waited_s": round(time.monotonic() - started, 1), "probe_syncs_per_s": last["syncs_per_s"]}


def read_states(connect: ZkEndpoint, topic: str, partitions: int) -> list[schema.PartitionStateRecord | None]:
    found = bulk.get_many(connect, [schema.partition_state_path(topic, p) for p in range(partitions)])
    return [schema.PartitionStateRecord.decode(f[0]) if f else None for f in found]


def wait_for_full_isrs(connect: ZkEndpoint, topics: dict[str, int], replication_factor: int, timeout_s: float,
                       what: str,
                       interval_s: float = 0.2) -> None:
    """Until every partition of `topics` (name -> partition count) has a state naming a full ISR."""
    wait_until(lambda: all(all(s is not None and len(s.isr) == replication_factor for s in read_states(connect, t, n))
                           for t, n in topics.items()), timeout_s, what, interval_s)


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


def zk_multi_floor_s(zk: ZkClient, writes: int, batch: int = 1000) -> float:
    """Seconds to setData `writes` znodes in epoch-checked multis of `batch`, pipelined:
    the same ZooKeeper work a controller does for that many partition states."""
    root = "/bench-floor"
    zk.kazoo.ensure_path(root)
    zk.kazoo.ensure_path(schema.CONTROLLER_EPOCH)
    _, epoch_stat = zk.kazoo.get(schema.CONTROLLER_EPOCH)
    existing = set(zk.kazoo.get_children(root))
    for start in range(0, writes, batch):
        tx = zk.kazoo.transaction()
        for i in range(start, min(writes, start + batch)):
            if str(i) not in existing:
                tx.create(f"{root}/{i}", b"{}")
        tx.commit()
    payload = schema.PartitionStateRecord(1, 1, (1, 2), 1).encode()
    started = time.monotonic()
    pending = []
    for start in range(0, writes, batch):
        tx = zk.kazoo.transaction()
        tx.check(schema.CONTROLLER_EPOCH, epoch_stat.version)
        for i in range(start, min(writes, start + batch)):
            tx.set_data(f"{root}/{i}", payload)
        pending.append(tx.commit_async())
    for result in pending:
        result.get()
    return time.monotonic() - started


def read_span_files(trace_dir: Path) -> list[dict]:
    spans = []
    for path in sorted(trace_dir.glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                spans.append(json.loads(line))
            except ValueError:
                continue
    return spans


def channels(cluster) -> ChannelCache:
    """A channel cache calling `cluster` with its operator certificate (plaintext if it is insecure)."""
    return ChannelCache(cluster.operator_tls)


def children_of(spans: list[dict], parent: dict) -> list[dict]:
    return [s for s in spans if s["trace_id"] == parent["trace_id"] and s.get("parent_span_id") == parent["span_id"]]


def hosted(address: str) -> int:
    """How many replicas the broker at `address` hosts (LogService.DescribeReplicas)."""
    import grpc

    from replog.v1 import log_pb2, log_pb2_grpc

    try:
        with open_channel(address, local.resolve_client_tls(),
                          [("grpc.max_receive_message_length", 256 << 20)]) as channel:
            reply = log_pb2_grpc.LogServiceStub(channel).DescribeReplicas(log_pb2.DescribeReplicasRequest(), timeout=60)
        return len(reply.replicas)
    except grpc.RpcError:
        return 0


def start_profilers(out_dir: str, pids: dict[str, int], seconds: float) -> list[subprocess.Popen]:
    """Record py-spy profiles (speedscope JSON) of the named processes for `seconds`."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        raise SystemExit("--profile needs py-spy (pip install py-spy in the venv, for profiling only)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds) + 1), "--rate", "200",
             "--format", "speedscope", "--output", str(out / f"{name}.speedscope.json"), "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name, pid in pids.items()
    ]


def percentile(values, fraction: float) -> float:
    """The value at `fraction` of the sorted values (nan if there are none): every bench's p50 / p99."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
