"""What must hold after every batch of fuzzed calls, read from the real cluster.

`ClusterWatch` takes a baseline once the cluster is up and the kept records are written, then
`problems()` compares with it:

- every service process still runs (none crashed or exited);
- no service log gained a traceback (an exception the service did not handle: gRPC logs
  "Exception calling application" with one and answers UNKNOWN);
- every replica on every broker (the playground's too) holds its log start and high watermark within
  its log (a forged fetch offset or log start taken as true would show here);
- no fence moved: ZooKeeper's `/controller_epoch`, each broker's epoch (the czxid of its
  registration), and the leader and partition epochs of the kept topic's partitions, in ZooKeeper
  and as each broker holds them (the fuzz never names the kept topic, so no entitled call moves them);
- no file appeared, vanished or changed outside the brokers' log directories (the state directory
  is a sentinel tree: configs, certificates, credentials, ZooKeeper's snapshot directory's parent,
  and the log directories' parent), and nothing named after the escape mark exists anywhere a path
  in a request could have led.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import grpc

from replog.common.zk import schema
from replog.v1 import common_pb2, log_pb2, log_pb2_grpc
from tests.integration.broker_helpers import zk_session
from tests.integration.controller_helpers import controller

from .messages import ESCAPE_MARK

TRACEBACK_SIGNS = ("Traceback (most recent call last)", "Exception calling application", "Exception iterating")
# Written by the running processes themselves: their logs and traces, the brokers' data (their log
# directories, data/broker-N), ZooKeeper's data. Everything else in the state directory (certificates,
# credentials, configs) is the sentinel tree.
_LIVE_PARTS = ("logs", "traces")


@dataclass(frozen=True)
class Fences:
    controller_epoch: int
    broker_epochs: dict[int, int]
    kept_epochs: dict[int, tuple[int, int, int]]            # partition -> (leader, leader epoch, partition epoch)
    held_epochs: dict[tuple[int, int], int]                 # (broker, partition) -> leader epoch the broker holds


class ClusterWatch:
    def __init__(self, cluster, kept_topic: str, partitions: int) -> None:
        self.cluster, self.kept_topic, self.partitions = cluster, kept_topic, partitions
        self.services = [n for n, p in cluster.processes.items() if p.role != "zookeeper"]
        self.brokers = [p.instance_id for p in cluster.of_role("broker")]
        self.fences = self.read_fences()
        self.log_offsets = {n: self._log_size(n) for n in self.services}
        self.tree = self._tree()
        self.escape_places = [p for p in _escape_places(cluster.state_dir) if not p.exists()]

    def problems(self) -> list[str]:
        found = [f"{n} is not running (crashed or exited)" for n in self.cluster.processes
                 if not self.cluster.is_running(n)]
        found += self._new_tracebacks()
        found += self._offsets_out_of_order()
        fences = self.read_fences()
        if fences != self.fences:
            found.append(f"a fence moved: before {self.fences}, after {fences}")
        tree = self._tree()
        if tree != self.tree:
            changed = sorted(set(tree.items()) ^ set(self.tree.items()))
            found.append(f"files changed outside the brokers' log directories: {changed[:10]}")
        found += [f"{p} exists: a path in a request reached the disk" for p in self.escape_places if p.exists()]
        found += [f"{p} exists inside a log directory" for p in self._escaped_into_log_dirs()]
        return found

    def read_fences(self) -> Fences:
        with zk_session(self.cluster) as zk:
            _, controller_epoch = controller(zk)
            broker_epochs = {b: zk.kazoo.get(schema.broker_path(b))[1].czxid for b in self.brokers}
            kept = {p: found for p in range(self.partitions) if (found := epochs_of(zk, self.kept_topic, p))}
        return Fences(controller_epoch, broker_epochs, kept, self._held_epochs())

    def _held_epochs(self) -> dict[tuple[int, int], int]:
        request = log_pb2.DescribeReplicasRequest(partitions=[
            common_pb2.TopicPartition(topic=self.kept_topic, partition=p) for p in range(self.partitions)])
        held = {}
        for broker in self.brokers:
            with self.cluster.channel(self.cluster.processes[f"broker-{broker}"].address) as channel:
                try:
                    replicas = log_pb2_grpc.LogServiceStub(channel).DescribeReplicas(request, timeout=30).replicas
                except grpc.RpcError as error:
                    held[(broker, -1)] = error.code().value[0]  # unanswered: differs from the baseline
                    continue
            held.update({(broker, r.partition): r.leader_epoch for r in replicas})
        return held

    def _offsets_out_of_order(self) -> list[str]:
        """Replicas whose log start or high watermark lies outside their log."""
        found = []
        for broker in self.brokers:
            with self.cluster.channel(self.cluster.processes[f"broker-{broker}"].address) as channel:
                try:
                    replicas = log_pb2_grpc.LogServiceStub(channel).DescribeReplicas(
                        log_pb2.DescribeReplicasRequest(), timeout=30).replicas
                except grpc.RpcError as error:
                    found.append(f"broker {broker} did not describe its replicas: {error.code().name}")
                    continue
            found += [f"broker {broker} holds {r.topic}-{r.partition} at log start {r.log_start_offset}, HW "
                      f"{r.high_watermark}, log end {r.log_end_offset}" for r in replicas
                      if not (0 <= r.log_start_offset <= r.log_end_offset and 0 <= r.high_watermark <= r.log_end_offset)]
        return found

    def _log_size(self, name: str) -> int:
        path = self.cluster.log_path(name)
        return path.stat().st_size if path.exists() else 0

    def _new_tracebacks(self) -> list[str]:
        found = []
        for name in self.services:
            path = self.cluster.log_path(name)
            with open(path, "rb") as log:
                log.seek(self.log_offsets[name])
                text = log.read().decode(errors="replace")
                self.log_offsets[name] = log.tell()
            found += [f"{name} logged a traceback: {entry}" for entry in _tracebacks(text)]
        return found

    def _tree(self) -> dict[str, tuple[int, int]]:
        """(size, mtime) of every file of the state directory outside the live parts (the processes' logs and
        traces, the brokers' log directories, ZooKeeper's data), and the names of those directories."""
        root = self.cluster.state_dir
        tree: dict[str, tuple[int, int]] = {}
        for directory, subdirectories, files in os.walk(root):
            relative = Path(directory).relative_to(root)
            parts = relative.parts
            if parts and parts[0] in _LIVE_PARTS:
                subdirectories[:] = []
                continue
            if len(parts) >= 2 and parts[0] == "data":  # a process's own data: its name is the fact kept
                tree[str(relative)] = (0, 0)
                subdirectories[:] = []
                continue
            if parts[:2] == ("zookeeper", "data"):  # ZooKeeper's snapshots and transaction logs
                subdirectories[:] = []
                continue
            for name in files:
                stat = (Path(directory) / name).stat()
                tree[str(relative / name)] = (stat.st_size, stat.st_mtime_ns)
            tree.update({str(relative / d) + "/": (0, 0) for d in subdirectories})
        return tree

    def _escaped_into_log_dirs(self) -> list[Path]:
        found = []
        for broker in self.brokers:
            data = self.cluster.data_dir(f"broker-{broker}")
            found += [p for p in data.rglob(f"*{ESCAPE_MARK}*")]
        return found


def _tracebacks(text: str) -> list[str]:
    """The log entries (JSON lines, or plain lines with a traceback after them) that carry a traceback."""
    found = []
    for line in text.splitlines():
        if not any(sign in line for sign in TRACEBACK_SIGNS):
            continue
        try:
            entry = json.loads(line)
            found.append(f"{entry.get('logger')}: {entry.get('msg')}\n{entry.get('exc', '')}"[:6000])
        except ValueError:
            found.append(line[:6000])
    return found


def epochs_of(zk, topic: str, partition: int) -> tuple[int, int, int] | None:
    """(leader, leader epoch, partition epoch: the state znode's version) of a partition, None if it has none."""
    found = zk.get(schema.partition_state_path(topic, partition))
    if not found:
        return None
    record = schema.PartitionStateRecord.decode(found[0])
    return record.leader, record.leader_epoch, found[1].version


def _escape_places(state_dir: Path) -> list[Path]:
    """Where `../../fuzz-escape`, `../fuzz-escape` or an absolute `/tmp/fuzz-escape` from a broker's log
    directory, its parent or the process's working directory would land."""
    places = {Path("/") / ESCAPE_MARK, Path("/tmp") / ESCAPE_MARK, Path.cwd() / ESCAPE_MARK,
              Path.cwd().parent / ESCAPE_MARK}
    for depth in range(0, 4):
        base = state_dir / "data" / "broker-1"
        for _ in range(depth):
            base = base.parent
        places.add(base / ESCAPE_MARK)
    return sorted(places)
