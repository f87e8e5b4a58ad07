"""The new leader's share of a broker failover, in one process: what each step costs per partition.

    .venv/bin/python bench/broker_steps.py --partitions 10000

Why: bench/failover.py measures the whole failover, but on this 2-core machine
its figure moves by 15% from run to run, more than most single changes to the
broker gain. This runs the same per-partition work as the new leader does in
that failover (3 brokers, RF 3, the replicas of broker 1's leaderships move to
this broker, broker 2) through the broker's real adapters -- the control,
replication and produce servicers' handlers, the state changes, the fetch
sessions, the logs on disk -- with no gRPC, ZooKeeper or other process, so a
change's effect shows within a few percent. Not simulated: the network, the
controller, the follower (its fetch requests are built here), topic config
watches and replica fetchers (stand-ins that record what they are told).

Reported (`steps_us_per_partition`), in the failover's order:
- become_leader: a LeaderAndIsr making this broker leader of the moved partitions;
- update_metadata: the UpdateMetadata of the same partitions;
- fetch_join: the follower's fetch session naming them, nothing new yet;
- produce: one 100-byte acks=1 batch to each, in requests of 50 partitions
  (acks=1: an acks=-1 request would wait here for a follower that is not running;
  the append is the same);
- fetch_records: the follower's next fetch, answered with those batches;
- fetch_high_watermark: the one after, reporting its new end offset, which
  moves the HW;
- isr_only: the second LeaderAndIsr, the dead broker leaving the ISR of the
  partitions this broker leads (an ISR-only change goes to the leader alone);
- update_metadata_isr_only: the UpdateMetadata of every partition whose ISR
  changed (every broker's metadata hears them all).
And `concurrent`: the produce requests on one thread each, with two fetch
sessions polling and the ISR-only LeaderAndIsr on threads of their own, as they
overlap in the failover: `wall_ms` and `cpu_ms` of the process for all of it,
and `steps_cpu_ms`, the sum of the same steps run one after another (the
difference is what running them at once costs).
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from replog.broker.control.controller_fence import ControllerFence  # noqa: E402
from replog.broker.control.state_changes import ReplicaStateChanges  # noqa: E402
from replog.broker.entrypoints.control_servicer import BrokerControlServicer  # noqa: E402
from replog.broker.entrypoints.metadata_cache import MetadataCache  # noqa: E402
from replog.broker.entrypoints.produce_edge import ProduceEdge  # noqa: E402
from replog.broker.entrypoints.replication_servicer import ReplicationServicer  # noqa: E402
from replog.broker.log import LogConfig  # noqa: E402
from replog.broker.produce.delayed_produces import DelayedProduces  # noqa: E402
from replog.broker.produce.produce_handler import ProduceHandler  # noqa: E402
from replog.broker.replicas.replica_manager import ReplicaManager  # noqa: E402
from replog.broker.runtime.metrics import BrokerMetrics  # noqa: E402
from replog.broker.runtime.turn import Turn  # noqa: E402
from replog.broker.runtime.wait_slots import WaitSlots  # noqa: E402
from replog.common import gc_policy, records  # noqa: E402
from replog.common.clock import SystemClock  # noqa: E402
from replog.common.refusal_log import RefusalLog  # noqa: E402
from replog.v1 import broker_control_pb2, common_pb2, log_pb2, replication_pb2  # noqa: E402

TOPIC = "steps"
BROKER, DEAD, FOLLOWER = 2, 1, 3
CHUNK = 50  # partitions per produce request, as bench/failover.py's probes


class Fetchers:
    """Stands in for the FetcherManager: this broker's own fetching is not measured."""

    def add(self, leader_id, partitions, trace_context=None) -> None:
        pass

    def remove(self, partitions) -> None:
        pass


class TopicConfigs:
    def watch(self, topic: str) -> None:
        pass

    def unwatch(self, topic: str) -> None:
        pass

    def min_insync_replicas(self, topic: str) -> int:
        return 2

    def log_append_time(self, topic: str) -> bool:
        return False

    def log_config(self, topic: str) -> LogConfig:
        return LogConfig()

    def compression(self, topic: str) -> int | None:
        return None  # each batch as its producer sent it

    def fsync_each_append(self, topic: str) -> bool:
        return False

    def fsync_each_append(self, topic: str) -> bool:
        return False


class IsrChanges:
    def submit(self, topic_partition) -> None:
        pass


class Context:
    """The little of a gRPC servicer context the handlers use."""

    def invocation_metadata(self):
        return ()

    def add_callback(self, callback) -> bool:
        return True

    def is_active(self) -> bool:
        return True


class Broker:
    """Broker 2's adapters, wired as bootstrap.py wires them, around logs in a temporary directory."""

    def __init__(self, log_dir: Path) -> None:
        clock = SystemClock()
        turn = Turn()
        self.replicas = ReplicaManager(broker_id=BROKER, log_dirs=[log_dir], log_config=LogConfig(), clock=clock)
        metrics, metadata = BrokerMetrics(CollectorRegistry()), MetadataCache()
        delayed = DelayedProduces(self.replicas.produce_progress, clock)
        self.replicas.consequences.connect(delayed_produces=delayed, isr_changes=IsrChanges())
        state_changes = ReplicaStateChanges(
            broker_id=BROKER, replicas=self.replicas, fetchers=Fetchers(), topic_configs=TopicConfigs(),
            now_ms=clock.monotonic_ms, turn=turn)
        self.control = BrokerControlServicer(state_changes=state_changes, metadata=metadata,
                                             broker_epoch_of=lambda: 0, fence=ControllerFence(lambda: 1),
                                             refusals=RefusalLog(logging.getLogger("bench"), time.monotonic))
        self.replication = ReplicationServicer(
            broker_id=BROKER, lookup=self.replicas.get, clock=clock, metrics=metrics, fetch_bytes_max=10 << 20,
            stopping=lambda: False, turn=turn)
        self.produce = ProduceEdge(ProduceHandler(
            lookup=self.replicas.get, is_known=metadata.has_partition, topic_configs=TopicConfigs(), delayed_produces=delayed,
            metrics=metrics, batch_bytes_max=1 << 20, request_timeout_ms=30_000,
            wait_slots=WaitSlots(128), turn=turn, clock=clock), clock)

    def leader_and_isr(self, states) -> None:
        self.control.LeaderAndIsr(broker_control_pb2.LeaderAndIsrRequest(
            controller_epoch=1, partitions=states, leaders=ENDPOINTS), Context())

    def update_metadata(self, states) -> None:
        self.control.UpdateMetadata(broker_control_pb2.UpdateMetadataRequest(
            controller_epoch=1, live_brokers=ENDPOINTS[1:], partitions=states), Context())

    def fetch(self, fetcher_id: int, fetcher_count: int, positions, session_id: int = 0, session_epoch: int = 0,
              max_wait_ms: int = 0):
        return self.replication.ReplicaFetch(replication_pb2.ReplicaFetchRequest(
            replica_id=FOLLOWER, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=10 << 20, partitions=positions,
            session_id=session_id, session_epoch=session_epoch, fetcher_id=fetcher_id,
            fetcher_count=fetcher_count), Context())


ENDPOINTS = [common_pb2.BrokerEndpoint(broker_id=b, host="127.0.0.1", port=9000 + b) for b in (1, 2, 3)]


def replicas_of(partition: int) -> list[int]:
    """bench/failover.py's rotating placement: the leader is partition % 3 + 1."""
    return [(partition + i) % 3 + 1 for i in range(3)]


def state(partition: int, leader: int, leader_epoch: int, isr: list[int], partition_epoch: int):
    return broker_control_pb2.PartitionState(topic=TOPIC, partition=partition, leader=leader,
                                             leader_epoch=leader_epoch, isr=isr, partition_epoch=partition_epoch,
                                             replicas=replicas_of(partition))


def without_dead(partition: int) -> list[int]:
    return [b for b in replicas_of(partition) if b != DEAD]


def position(partition: int, fetch_offset: int, last_fetched_epoch: int):
    return replication_pb2.ReplicaFetchPartition(topic=TOPIC, partition=partition, current_leader_epoch=2,
                                                 fetch_offset=fetch_offset, last_fetched_epoch=last_fetched_epoch)


class Scenario:
    """One broker before the failover: every partition hosted, broker 1 leading a third of them."""

    def __init__(self, partitions: int, log_dir: Path) -> None:
        self.broker = Broker(log_dir)
        self.broker.leader_and_isr([state(p, replicas_of(p)[0], 1, replicas_of(p), 1) for p in range(partitions)])
        self.moved = [p for p in range(partitions) if replicas_of(p)[0] == DEAD]
        self.isr_only_metadata = [state(p, replicas_of(p)[0], 1, without_dead(p), 2)
                                  for p in range(partitions) if replicas_of(p)[0] != DEAD]
        self.isr_only = [s for s in self.isr_only_metadata if s.leader == BROKER]
        self.new_leader = [state(p, BROKER, 2, without_dead(p), 2) for p in self.moved]
        batch = records.encode_batch([(None, b"x" * 100, int(time.time() * 1000))])
        self.produce_requests = [
            log_pb2.ProduceRequest(acks=1, timeout_ms=10_000, partitions=[
                log_pb2.ProducePartitionData(topic=TOPIC, partition=p, record_batch=batch)
                for p in self.moved[start:start + CHUNK]])
            for start in range(0, len(self.moved), CHUNK)]
        gc_policy.settle()


def timed(step) -> tuple[float, object]:
    gc.collect()
    started = time.thread_time()
    out = step()
    return (time.thread_time() - started) * 1000, out


def run_steps(scenario: Scenario) -> dict[str, float]:
    broker, moved = scenario.broker, scenario.moved
    ms: dict[str, float] = {}
    ms["become_leader"], _ = timed(lambda: broker.leader_and_isr(scenario.new_leader))
    ms["update_metadata"], _ = timed(lambda: broker.update_metadata(scenario.new_leader))
    ms["fetch_join"], joined = timed(lambda: broker.fetch(0, 1, [position(p, 0, -1) for p in moved]))
    ms["produce"], _ = timed(lambda: [broker.produce.produce(r) for r in scenario.produce_requests])
    ms["fetch_records"], answer = timed(lambda: broker.fetch(0, 1, [], joined.session_id, 1))
    assert sum(1 for p in answer.partitions if p.records) == len(moved), "every moved partition has its batch"
    ms["fetch_high_watermark"], answer = timed(
        lambda: broker.fetch(0, 1, [position(p, 1, 2) for p in moved], joined.session_id, 2))
    assert all(p.high_watermark == 1 for p in answer.partitions), "the HW moved past every batch"
    ms["isr_only"], _ = timed(lambda: broker.leader_and_isr(scenario.isr_only))
    ms["update_metadata_isr_only"], _ = timed(lambda: broker.update_metadata(scenario.isr_only_metadata))
    counts = {"isr_only": len(scenario.isr_only), "update_metadata_isr_only": len(scenario.isr_only_metadata)}
    return {step: round(total / counts.get(step, len(moved)) * 1000, 2) for step, total in ms.items()}


def run_concurrent(scenario: Scenario) -> dict[str, float]:
    """The produces, two fetch sessions and the ISR-only LeaderAndIsr, overlapping as in the failover."""
    broker, moved = scenario.broker, scenario.moved
    broker.leader_and_isr(scenario.new_leader)
    halves = [moved[0::2], moved[1::2]]
    sessions = [broker.fetch(f, 2, [position(p, 0, -1) for p in halves[f]]).session_id for f in (0, 1)]
    go = threading.Event()

    def produce(request) -> None:
        go.wait()
        broker.produce.produce(request)

    def poll(fetcher_id: int) -> None:
        go.wait()
        seen: set[int] = set()
        session_epoch = 1
        while len(seen) < len(halves[fetcher_id]):
            answer = broker.fetch(fetcher_id, 2, [], sessions[fetcher_id], session_epoch, max_wait_ms=500)
            session_epoch += 1
            seen.update(p.partition for p in answer.partitions if p.records)

    def isr_only() -> None:
        go.wait()
        broker.leader_and_isr(scenario.isr_only)

    threads = [threading.Thread(target=produce, args=(r,)) for r in scenario.produce_requests]
    threads += [threading.Thread(target=poll, args=(f,)) for f in (0, 1)] + [threading.Thread(target=isr_only)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)  # every thread waiting at the gate
    gc.collect()
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    return {"wall_ms": round((time.perf_counter() - wall_started) * 1000, 1),
            "cpu_ms": round((time.process_time() - cpu_started) * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replog-bench-steps-") as directory:
        harness.note(f"{args.partitions} partitions, broker {DEAD}'s leaderships moving to broker {BROKER}")
        sequential = Scenario(args.partitions, Path(directory) / "sequential")
        steps = run_steps(sequential)
        # The steps the concurrent run repeats: each moved partition's produce and record fetch, and the
        # ISR-only decisions.
        moved, isr_only = len(sequential.moved), len(sequential.isr_only)
        steps_cpu_ms = (steps["produce"] * moved + steps["fetch_records"] * moved + steps["isr_only"] * isr_only) / 1000
        concurrent = run_concurrent(Scenario(args.partitions, Path(directory) / "concurrent"))
    harness.emit({
        "partitions": args.partitions,
        "moved_partitions": len(sequential.moved),
        "isr_only_partitions": len(sequential.isr_only),
        "steps_us_per_partition": steps,
        "concurrent": {**concurrent, "steps_cpu_ms": round(steps_cpu_ms, 1)},
    })


if __name__ == "__main__":
    main()
