"""Failover benchmark: kill -9 the broker that leads a third of the partitions and
measure how long until every moved partition accepts acks=all writes again.

    .venv/bin/python bench/failover.py --partitions 10000

Reported: moved_leaders; notice_to_writable_s (from the controller noticing the
loss, the start of its controller.broker_change span, to the last moved
partition acknowledging an acks=all write at its new leader: once ZooKeeper
names a live leader (the benchmark watches the partition states, as a client
with a ZooKeeper watch would), chunks of 50 partitions are probed concurrently
with a long produce timeout, so each write completes when its partition replicates;
retried only on an error), its 10/50/90th percentiles; the controller's
phases from the same trace (decide, ZooKeeper writes, requests until every
broker answered); broker_steps, each broker's become_leader and
become_follower spans in the same trace (partitions, start and end from the
notice: the first wave's are on the critical path, the ISR-only wave's
follow); and floor_zk_multi_s, the time the same number of
partition-state writes take as raw pipelined ZooKeeper multis in this run;
and cpu_s_notice_to_writable, the CPU seconds each process (the benchmark as
"bench") used from the notice to the last acknowledgement, sampled every 0.1 s:
on 2 cores their sum against twice the window shows how contended it was.
The ZooKeeper session timeout (time to *notice*) is configuration, reported
separately as session_timeout_ms. The brokers run two replica fetchers per
leader (`--replica-fetchers`, reported as num_replica_fetchers; the brokers'
default is one): see services/broker/.../fetcher_manager.py for why and by how much.
`--timeline` adds `timeline`: every span of the failover's trace (controller
phases and sends, each broker's steps) and every probe request, with start and
end in ms from the notice, in order: where the window went in that run.
`--isr-only-sample N` also probes N partitions whose leader lives on and
reports `isr_only_sample_writable_s`: their acks=all writes wait for the dead
follower to leave their ISR, which the controller writes after the new
leaderships (controller core/sequencing.py), so any change that favours the moved
partitions shows its cost here.
`--placement kafka` lays the partitions out as CreateTopic would, so the moved
leaderships split over both survivors (reported in moved_leaders_by_new_leader);
on this machine that was no faster: 1.58, 1.32, 1.60, 1.56, 1.30 s, and later
1.20, 1.22, 1.23 s on a day rotating gave 1.1-1.3 s.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.common import records  # noqa: E402
from replog.common.core.placement import assign_replicas_to_brokers  # noqa: E402
from replog.common.zk import bulk, change_feed, schema  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import common_pb2, log_pb2, log_pb2_grpc  # noqa: E402

TOPIC = "failover-bench"
BROKER_STEPS = ("broker.become_leader", "broker.become_follower")  # reported from the failover's trace
CHUNK = 50
PROBE_TIMEOUT_MS = 10_000  # a probe waits for replication rather than being sent again


def produce_round(cluster, channels, states, pending: set[int], batch: bytes, timeout_ms: int,
                  requests_log: list | None = None) -> dict[int, float]:
    """One acks=all produce to each pending partition at its current leader, in small requests all in
    flight at once; returns the partitions that succeeded, each with the time its request completed.
    `requests_log` gets (sent, answered, leader, partitions, acknowledged) per request (times: time.time())."""
    brokers = {int(p.name.split("-")[1]): p.address for p in cluster.of_role("broker")}
    by_leader: dict[int, list[int]] = {}
    for p in pending:
        state = states[p]
        if state is not None and state.leader in brokers:
            by_leader.setdefault(state.leader, []).append(p)
    calls = []
    for leader, partitions in by_leader.items():
        stub = log_pb2_grpc.LogServiceStub(channels.get(brokers[leader]))
        # Small requests, so one slow partition holds back only its neighbours.
        for start in range(0, len(partitions), CHUNK):
            request = log_pb2.ProduceRequest(acks=-1, timeout_ms=timeout_ms, partitions=[
                log_pb2.ProducePartitionData(topic=TOPIC, partition=p, record_batch=batch)
                for p in partitions[start:start + CHUNK]])
            sent = time.time()
            call = stub.Produce.future(request, timeout=10)
            finished: list[float] = []
            call.add_done_callback(lambda _call, finished=finished: finished.append(time.time()))
            calls.append((call, finished, sent, leader, len(request.partitions)))
    done: dict[int, float] = {}
    for call, finished, sent, leader, count in calls:
        try:
            reply = call.result()
        except grpc.RpcError:
            continue
        while not finished:  # the callback runs right after the result is set
            time.sleep(0.001)
        acknowledged = [r.partition for r in reply.partitions if r.error_code == common_pb2.ERROR_CODE_NONE]
        done.update((p, finished[0]) for p in acknowledged)
        if requests_log is not None:
            requests_log.append((sent, finished[0], leader, count, len(acknowledged)))
    return done


def probe_until_writable(cluster, channels, moved: list[int], batch: bytes, partitions: int,
                         deadline_s: float, requests_log: list | None = None,
                         also: list[int] | None = None) -> dict[int, float]:
    """When each moved partition first acknowledges an acks=all write. The moved partitions' states
    are read from ZooKeeper as it reports them changed, until each names a live leader; each chunk
    of partitions is probed by its own thread as soon as its leaders are known, with a long produce
    timeout, so a probe sent before the followers replicate completes at the moment they do (and
    the probes add little load). `also` names partitions whose leader lives on, probed in chunks of
    their own from the start."""
    dead = {1}
    states = {"now": harness.read_states(cluster.zookeeper_endpoint, TOPIC, partitions)}
    writable: dict[int, float] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + deadline_s
    finished = threading.Event()

    def refresh() -> None:
        # The moved partitions' states are read when ZooKeeper reports them changed (a persistent
        # recursive watch), as a client would learn of a new leader from its own watch; polling
        # added up to a poll interval to every figure and loaded the server it measures.
        changed: set[int] = set(moved)
        arrived = threading.Condition()

        def on_change(path: str | None) -> None:
            named = schema.parse_topic_path(path) if path else None
            with arrived:
                if path is None:
                    changed.update(moved)  # the feed broke: read everything again
                elif named is not None and named[0] == "state" and named[1] == TOPIC:
                    changed.add(named[2])
                arrived.notify()

        unresolved = set(moved)
        feed = change_feed.ChangeFeed(cluster.zookeeper_endpoint, [schema.partitions_path(TOPIC)], on_change)
        feed.open()
        try:
            with bulk.BulkReader(cluster.zookeeper_endpoint) as reader:
                while unresolved and not finished.is_set():
                    with arrived:
                        if not changed & unresolved:
                            arrived.wait(0.25)
                        due = sorted(changed & unresolved)
                        changed.clear()
                    if not due:
                        continue
                    found = reader.get_many([schema.partition_state_path(TOPIC, p) for p in due])
                    now = list(states["now"])
                    for p, entry in zip(due, found):
                        now[p] = schema.PartitionStateRecord.decode(entry[0]) if entry else None
                    states["now"] = now
                    unresolved -= {p for p in due if now[p] is not None and now[p].leader >= 0
                                   and now[p].leader not in dead}
        finally:
            feed.close()

    def probe(chunk: list[int]) -> None:
        pending = set(chunk)
        while pending and time.monotonic() < deadline:
            now = states["now"]
            ready = {p for p in pending if now[p] is not None and now[p].leader >= 0 and now[p].leader not in dead}
            if not ready:
                time.sleep(0.05)
                continue
            done = produce_round(cluster, channels, now, ready, batch, timeout_ms=PROBE_TIMEOUT_MS,
                                 requests_log=requests_log)
            with lock:
                writable.update(done)
            pending -= done.keys()
            if ready - done.keys():
                time.sleep(0.05)

    refresher = threading.Thread(target=refresh, daemon=True)
    refresher.start()
    probers = [threading.Thread(target=probe, args=(group[i:i + CHUNK],))
               for group in (moved, also or []) for i in range(0, len(group), CHUNK)]
    for thread in probers:
        thread.start()
    for thread in probers:
        thread.join()
    finished.set()
    return writable


def isr_only_sample(states, count: int) -> list[int]:
    """`count` partitions led by broker 2 and by broker 3, alternately: after broker 1 dies they keep their
    leader, and an acks=all write to one waits until broker 1 has left its ISR."""
    by_leader = {b: [p for p, s in enumerate(states) if s.leader == b and 1 in s.isr] for b in (2, 3)}
    if count > 2 * min(len(partitions) for partitions in by_leader.values()):
        raise SystemExit(f"--isr-only-sample {count}: brokers 2 and 3 lead {len(by_leader[2])} and "
                         f"{len(by_leader[3])} partitions that broker 1 follows; ask for at most twice the fewer")
    return [by_leader[2 + i % 2][i // 2] for i in range(count)]


def timeline(spans: list[dict], root: dict, probes: list) -> list[dict]:
    """The failover's trace spans and the probe requests, each with start and end in ms from the
    notice, in order of start. A span says which process (service, instance) and, when it has
    one, how many partitions; a probe request names its leader, its partitions and how many of
    them it found writable (a request sent before the leader took over comes back with none)."""
    noticed_ns = root["start_ns"]

    def ms(ns: float) -> float:
        return round((ns - noticed_ns) / 1e6, 1)

    rows = []
    for span in spans:
        if span["trace_id"] != root["trace_id"]:
            continue
        resource, attributes = span.get("resource", {}), span["attributes"]
        row = {"start_ms": ms(span["start_ns"]), "end_ms": ms(span["end_ns"]), "span": span["name"],
               "process": f"{resource.get('service.name', '?')}-{resource.get('service.instance.id', '?')}"}
        count = attributes.get("partition.count", attributes.get("partitions"))
        if isinstance(count, int):
            row["partitions"] = count
        rows.append(row)
    for sent, answered, leader, count, acknowledged in probes:
        rows.append({"start_ms": ms(sent * 1e9), "end_ms": ms(answered * 1e9), "probe_to_broker": leader,
                     "partitions": count, "acknowledged": acknowledged})
    return sorted(rows, key=lambda row: row["start_ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10000)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--placement", choices=("rotating", "kafka"), default="rotating",
                        help="rotating (default, as in every figure recorded so far): each replica list is a "
                             "rotation of (1, 2, 3), so broker 1's leaderships all move to broker 2; kafka: the "
                             "lists CreateTopic makes (assignReplicasToBrokers, start index and shift 0), whose "
                             "followers alternate, so they move half to each survivor")
    parser.add_argument("--replica-fetchers", type=int, default=2,
                        help="the brokers' num_replica_fetchers (fetchers per leader followed; default 2, "
                             "the brokers' own default is 1)")
    parser.add_argument("--timeline", action="store_true",
                        help="also report `timeline`: every span of the failover's trace and every probe request, "
                             "in ms from the notice, to see where the window goes")
    parser.add_argument("--isr-only-sample", type=int, default=0, metavar="N",
                        help="also probe N partitions whose leader survives (alternately broker 2's and 3's), "
                             "whose acks=all writes wait only for the dead follower to leave their ISR, and report "
                             "isr_only_sample_writable_s (from the notice; they are probed from the kill on)")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's state directory for inspection")
    parser.add_argument("--insecure", action="store_true",
                        help="run the cluster in plaintext with anonymous ZooKeeper sessions (replog-local up "
                             "--insecure), to compare with checkouts older than mutual TLS")
    parser.add_argument("--profile", metavar="DIR", help="record py-spy profiles of the surviving brokers and the "
                                                         "controller for 10 s from the kill")
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1, zookeeper_session_timeout_ms=args.session_timeout_ms,
                       insecure=args.insecure, zookeeper_auth=not args.insecure,
                       extra_args={"broker": ["--replica-lag-time-max-ms", "30000",
                                              "--num-replica-fetchers", str(args.replica_fetchers)]})
    with harness.local_cluster(spec, keep=args.keep) as cluster:
        harness.note(f"state in {cluster.state_dir}")
        zk = ZkClient(cluster.zookeeper_endpoint)
        zk.start()
        channels = harness.channels(cluster)
        if args.placement == "kafka":
            assignment = assign_replicas_to_brokers({1: None, 2: None, 3: None}, args.partitions, 3,
                                                    start_index=0, replica_shift=0)
        else:
            assignment = harness.rotating_assignment(args.partitions, [1, 2, 3], 3)
        harness.note(f"creating {args.partitions} partitions")
        harness.create_topic(zk, TOPIC, assignment, {"min.insync.replicas": "2"})
        harness.wait_for_full_isrs(cluster.zookeeper_endpoint, {TOPIC: args.partitions}, 3, 600,
                                   "every partition state")
        batch = records.encode_batch([(None, b"x" * 100, int(time.time() * 1000))])
        states = harness.read_states(cluster.zookeeper_endpoint, TOPIC, args.partitions)
        pending = set(range(args.partitions))
        harness.note("warming up: one acks=all write per partition")
        deadline = time.monotonic() + 600
        while pending and time.monotonic() < deadline:
            pending -= produce_round(cluster, channels, states, pending, batch, timeout_ms=5000).keys()
        if pending:
            raise SystemExit(f"{len(pending)} partitions never accepted a write before the failover")
        moved = {p for p, s in enumerate(states) if s.leader == 1}
        sample = isr_only_sample(states, args.isr_only_sample)
        floor_s = harness.zk_multi_floor_s(zk, len(moved))
        harness.note(f"killing broker-1, leader of {len(moved)} partitions")
        profilers = harness.start_profilers(args.profile, {
            name: cluster.processes[name].pid for name in ("broker-2", "broker-3", "controller-1")}, 10) \
            if args.profile else []
        with harness.CpuSampler(cluster, "bench") as cpu:
            killed_at = time.time()
            cluster.signal("broker-1", signal.SIGKILL)
            probes: list = []
            writable = probe_until_writable(cluster, channels, sorted(moved), batch, args.partitions,
                                            deadline_s=120, requests_log=probes, also=sample)
        sample_writable = sorted(writable.pop(p) for p in sample if p in writable)
        if len(writable) < len(moved):
            raise SystemExit(f"{len(moved) - len(writable)} moved partitions not writable within 120 s")
        if len(sample_writable) < len(sample):
            raise SystemExit(f"{len(sample) - len(sample_writable)} of the ISR-only sample not writable within 120 s")
        writable_at = sorted(writable.values())
        after = harness.read_states(cluster.zookeeper_endpoint, TOPIC, args.partitions)
        new_leaders = Counter(after[p].leader for p in moved)
        last_success = writable_at[-1]
        time.sleep(1.5)  # let the span processors flush
        for proc in profilers:
            proc.wait(timeout=60)
        spans = harness.read_span_files(cluster.trace_dir)
        roots = [s for s in spans if s["name"] == "controller.broker_change"
                 and 1 in (s["attributes"].get("brokers.dead") or [])]
        if not roots:
            raise SystemExit("no controller.broker_change span for broker 1 in the trace files")
        root = roots[-1]
        phases = {c["name"]: (c["end_ns"] - c["start_ns"]) / 1e9 for c in harness.children_of(spans, root)}
        noticed = root["start_ns"] / 1e9
        broker_steps = sorted((
            {"broker": int(span.get("resource", {}).get("service.instance.id", -1)),
             "step": span["name"].removeprefix("broker."),
             "partitions": span["attributes"].get("partition.count", 0),
             "start_s": round(span["start_ns"] / 1e9 - noticed, 3), "end_s": round(span["end_ns"] / 1e9 - noticed, 3)}
            for span in spans if span["trace_id"] == root["trace_id"] and span["name"] in BROKER_STEPS),
            key=lambda step: step["start_s"])
        result = {
            "partitions": args.partitions,
            "num_replica_fetchers": args.replica_fetchers,
            "moved_leaders": len(moved),
            "placement": args.placement,
            "moved_leaders_by_new_leader": {str(b): n for b, n in sorted(new_leaders.items())},
            "notice_to_writable_s": round(last_success - noticed, 3),
            "kill_to_notice_s": round(noticed - killed_at, 3),
            "notice_to_writable_s_by_share": {
                f"p{q}": round(sorted(writable_at)[min(len(writable_at) - 1, len(writable_at) * q // 100)] - noticed, 3)
                for q in (10, 50, 90)},
            "session_timeout_ms": args.session_timeout_ms,
            "phases": {
                "decide_s": round(phases.get("controller.decide", 0), 4),
                "zookeeper_writes_s": round(phases.get("controller.zookeeper_write", 0), 4),
                "requests_until_brokers_done_s": round(phases.get("controller.send_requests", 0), 4),
                "controller_event_s": round((root["end_ns"] - root["start_ns"]) / 1e9, 4),
            },
            "broker_steps": broker_steps,
            "floor_zk_multi_s": round(floor_s, 4),
            "cpu_s_notice_to_writable": cpu.used_between(noticed, last_success),
        }
        if sample:
            result["isr_only_sample_writable_s"] = {
                "partitions": len(sample), "p50": round(harness.percentile(sample_writable, 0.5) - noticed, 3),
                "max": round(sample_writable[-1] - noticed, 3)}
        if args.timeline:
            result["timeline"] = timeline(spans, root, probes)
        zk.stop()
        channels.close()
    harness.emit(result)


if __name__ == "__main__":
    main()
