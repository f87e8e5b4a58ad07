"""The controller end to end with real brokers, the gateway and the CLI:
acks=all writes survive broker deaths and controlled shutdowns, and every admin
operation (create, describe, add partitions, delete, reassign, cancel,
preferred election) completes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from replog.client import Consumer, Producer
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2, admin_pb2_grpc, log_pb2, log_pb2_grpc

from .controller_helpers import wait_for

pytestmark = pytest.mark.integration

SESSION_MS = 3000
BIN = Path(sys.executable).parent


def replog(cluster, *args: str, check: bool = True) -> dict | str:
    result = subprocess.run([str(BIN / "replog"), "--gateway", cluster.gateway_address, "-o", "json", *args],
                            capture_output=True, text=True, timeout=60)
    if check:
        assert result.returncode == 0, f"replog {' '.join(args)}: {result.stderr}{result.stdout}"
    try:
        return json.loads(result.stdout)
    except ValueError:
        return result.stdout


def partitions(cluster, topic: str) -> dict[int, dict]:
    described = replog(cluster, "topics", "describe", topic)
    return {p["partition"]: p for p in described["topics"][0]["partitions"]} if described["topics"] else {}


def brokers(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker") if cluster.is_running(p.name)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("controller-e2e"))
    # Two fetchers per leader (the default is one): failover, shutdown and reassignment here also
    # run with a follower's partitions split over two fetch sessions at each leader.
    cluster = factory(ClusterSpec(zookeeper_session_timeout_ms=SESSION_MS,
                                  extra_args={"broker": ["--replica-lag-time-max-ms", "4000",
                                                         "--num-replica-fetchers", "2"]}))
    yield cluster
    factory.teardown()


def ensure_all_brokers(cluster) -> None:
    for process in cluster.of_role("broker"):
        if not cluster.is_running(process.name):
            cluster.start(process.name)
            cluster.wait_healthy([process.name])


def fully_replicated(cluster, topic: str, count: int):
    found = partitions(cluster, topic)
    return len(found) == count and all(len(p["isr"]) == len(p["replicas"]) and p["leader"] >= 0
                                       for p in found.values())


def test_killed_leader_broker_partitions_move_and_accept_acks_all(cluster):
    ensure_all_brokers(cluster)
    replog(cluster, "topics", "create", "kill9", "--partitions", "6", "--replication-factor", "3",
           "--config", "min.insync.replicas=2")
    wait_for(lambda: fully_replicated(cluster, "kill9", 6), 30, "a fully replicated topic")
    before = partitions(cluster, "kill9")
    victim = before[0]["leader"]
    led = [p for p, info in before.items() if info["leader"] == victim]
    cluster.kill(f"broker-{victim}")
    wait_for(lambda: all(partitions(cluster, "kill9")[p]["leader"] not in (victim, -1) for p in led),
             SESSION_MS / 1000 + 15, "new leaders for the dead broker's partitions")
    after = partitions(cluster, "kill9")
    for p in led:
        assert after[p]["leader"] in before[p]["isr"] and after[p]["leader_epoch"] == before[p]["leader_epoch"] + 1

    def caches_agree():
        # Clients learn leaders from any broker's Metadata: once the ISRs have shrunk, every
        # survivor tells each partition as ZooKeeper has it (both waves of the controller's
        # UpdateMetadata reached it, the second without repeating the first's partitions).
        told = partitions(cluster, "kill9")
        want = {p: (i["leader"], i["leader_epoch"], sorted(i["isr"])) for p, i in told.items()}
        if any(victim in isr for _, _, isr in want.values()):
            return None
        for address in brokers(cluster):
            with cluster.channel(address) as channel:
                reply = log_pb2_grpc.LogServiceStub(channel).Metadata(log_pb2.MetadataRequest(topics=["kill9"]),
                                                                      timeout=5)
            (topic,) = reply.topics
            if {m.partition: (m.leader, m.leader_epoch, sorted(m.isr)) for m in topic.partitions} != want:
                return None
        return True

    wait_for(caches_agree, 15, "every surviving broker's metadata to match ZooKeeper")
    with Producer(brokers(cluster), acks=-1, delivery_timeout_ms=30000) as producer:
        futures = [producer.send("kill9", f"after-{p}".encode(), partition=p) for p in led]
        producer.flush(30)
    assert all(f.exception() is None for f in futures), [f.exception() for f in futures]
    cluster.start(f"broker-{victim}")
    cluster.wait_healthy([f"broker-{victim}"])
    wait_for(lambda: fully_replicated(cluster, "kill9", 6), 30, "the returned broker back in every ISR")


def test_controlled_shutdown_loses_no_write_of_a_retrying_producer(cluster):
    ensure_all_brokers(cluster)
    replog(cluster, "topics", "create", "graceful", "--partitions", "9", "--replication-factor", "3",
           "--config", "min.insync.replicas=2")
    wait_for(lambda: fully_replicated(cluster, "graceful", 9), 30, "a fully replicated topic")
    leaders = {p: info["leader"] for p, info in partitions(cluster, "graceful").items()}
    victim = max(set(leaders.values()), key=lambda b: sum(1 for v in leaders.values() if v == b))
    assert sum(1 for v in leaders.values() if v == victim) >= 3  # a third of the partitions
    sent, failures, stop = [], [], threading.Event()
    producer = Producer(brokers(cluster), acks=-1, delivery_timeout_ms=60000)

    def write() -> None:
        i = 0
        while not stop.is_set():
            sent.append(producer.send("graceful", f"r{i}".encode(), partition=i % 9))
            i += 1
            time.sleep(0.002)

    def acknowledged(futures) -> int:
        return sum(1 for f in futures if f.done() and f.exception() is None)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_for(lambda: acknowledged(list(sent)) >= 200, 30, "200 writes acknowledged before the stop")
        cluster.stop(f"broker-{victim}")  # SIGTERM: ControlledShutdown first, then exit
        stopped_at = len(sent)
        wait_for(lambda: acknowledged(sent[stopped_at:]) >= 200, 30, "200 writes sent after the stop acknowledged")
    finally:
        stop.set()
        writer.join()
    producer.flush(60)
    producer.close()
    failures = [f.exception() for f in sent if f.exception() is not None]
    assert not failures, f"{len(failures)} of {len(sent)} writes failed, first: {failures[0]}"
    assert all(info["leader"] != victim for info in partitions(cluster, "graceful").values())
    log = cluster.log_path(f"broker-{victim}").read_text()
    assert "controlled shutdown" in log.lower()
    counts: dict[int, int] = {}
    with Consumer(brokers(cluster), "graceful") as consumer:
        deadline = time.monotonic() + 30
        while sum(counts.values()) < len(sent) and time.monotonic() < deadline:
            for record in consumer.poll(500):
                counts[record.partition] = counts.get(record.partition, 0) + 1
    assert sum(counts.values()) == len(sent)


def test_topic_lifecycle_create_add_partitions_delete_with_a_broker_down(cluster):
    ensure_all_brokers(cluster)
    replog(cluster, "topics", "create", "life", "--partitions", "2", "--replication-factor", "2")
    wait_for(lambda: fully_replicated(cluster, "life", 2), 30, "the topic")
    replog(cluster, "topics", "add-partitions", "life", "--partitions", "4")
    wait_for(lambda: fully_replicated(cluster, "life", 4), 30, "the added partitions")
    cluster.kill("broker-3")
    replog(cluster, "topics", "delete", "life")
    wait_for(lambda: "life" not in replog(cluster, "topics", "list", "--include-deleting")["topics"],
             SESSION_MS / 1000 + 20, "the topic to be deleted")
    cluster.start("broker-3")
    cluster.wait_healthy(["broker-3"])
    data_dir = cluster.data_dir("broker-3")
    wait_for(lambda: not any(p.name.startswith("life-") for p in data_dir.iterdir()), 20,
             "broker 3 to delete its replicas of the deleted topic when it returns")


def test_reassignment_moves_replicas_and_cancel_restores(cluster, tmp_path):
    ensure_all_brokers(cluster)
    replog(cluster, "topics", "create", "moving", "--replica-assignment", "1:2,2:1")
    wait_for(lambda: fully_replicated(cluster, "moving", 2), 30, "the topic")
    with Producer(brokers(cluster), acks=-1) as producer:
        for i in range(200):
            producer.send("moving", f"v{i}".encode(), partition=i % 2)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moving", "partition": 0, "replicas": [3, 2]},
        {"topic": "moving", "partition": 1, "replicas": [2, 3]},
    ]}))
    replog(cluster, "reassign", "execute", "--reassignment-json-file", str(plan))
    wait_for(lambda: replog(cluster, "reassign", "verify", "--reassignment-json-file", str(plan)).get("complete"),
             60, "the reassignment to complete")
    after = partitions(cluster, "moving")
    assert after[0]["replicas"] == [3, 2] and after[1]["replicas"] == [2, 3]
    assert set(after[0]["isr"]) == {2, 3} and after[0]["leader"] in (2, 3)
    wait_for(lambda: not (cluster.data_dir("broker-1") / "moving-0").exists(), 20,
             "the removed replica's log to be deleted")
    with Consumer(brokers(cluster), "moving", partitions=[0]) as consumer:
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 100 and time.monotonic() < deadline:
            got.extend(consumer.poll(500))
    assert [r.value for r in got] == [f"v{i}".encode() for i in range(0, 200, 2)]

    # A reassignment onto a dead broker never completes; cancel puts the original replicas back. It is
    # executed in-process right after the kill, while broker 1 is still registered: once its session
    # expires the gateway knows no broker 1 and refuses the plan (a CLI started on a loaded machine
    # could come too late).
    cluster.kill("broker-1")
    admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address)).ExecuteReassignment(
        admin_pb2.ExecuteReassignmentRequest(partitions=[
            admin_pb2.ReplicaAssignment(topic="moving", partition=0, replicas=[1, 2])]), timeout=30)
    replog(cluster, "reassign", "cancel", "--all")
    wait_for(lambda: not partitions(cluster, "moving")[0]["adding_replicas"] and
             sorted(partitions(cluster, "moving")[0]["replicas"]) == [2, 3], 30, "the cancel to restore [3, 2]")
    cluster.start("broker-1")
    cluster.wait_healthy(["broker-1"])


def test_preferred_election_moves_leadership_back(cluster, tmp_path):
    ensure_all_brokers(cluster)
    replog(cluster, "topics", "create", "pref", "--replica-assignment", "1:2:3,2:3:1,3:1:2")
    wait_for(lambda: fully_replicated(cluster, "pref", 3), 30, "the topic")
    cluster.kill("broker-1")
    wait_for(lambda: partitions(cluster, "pref")[0]["leader"] not in (1, -1), SESSION_MS / 1000 + 15,
             "partition 0 to fail over")
    cluster.start("broker-1")
    cluster.wait_healthy(["broker-1"])
    wait_for(lambda: fully_replicated(cluster, "pref", 3), 30, "broker 1 back in the ISRs")
    # Only this topic's partitions: the module's other topics may still be catching broker 1 up,
    # and a preferred replica outside the ISR is (rightly) a failed election.
    plan = tmp_path / "pref.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "pref", "partition": p} for p in range(3)]}))
    replog(cluster, "elect-leaders", "--preferred", "--path-to-json-file", str(plan))
    wait_for(lambda: partitions(cluster, "pref")[0]["leader"] == 1, 20, "leadership back on the preferred replica")
    assert [partitions(cluster, "pref")[p]["leader"] for p in range(3)] == [1, 2, 3]


def test_an_unclean_topic_comes_back_on_a_returning_out_of_sync_replica(cluster):
    # Kafka's unclean.leader.election.enable: with every ISR member dead, a returning replica
    # that was not in the ISR may lead (losing what it missed); without it the partition waits.
    ensure_all_brokers(cluster)
    replog(cluster, "topics", "create", "risky", "--partitions", "1", "--replication-factor", "2",
           "--config", "unclean.leader.election.enable=true")
    wait_for(lambda: fully_replicated(cluster, "risky", 1), 30, "a fully replicated topic")
    leader = partitions(cluster, "risky")[0]["leader"]
    follower = next(r for r in partitions(cluster, "risky")[0]["replicas"] if r != leader)
    cluster.kill(f"broker-{follower}")
    wait_for(lambda: partitions(cluster, "risky")[0]["isr"] == [leader], SESSION_MS / 1000 + 15,
             "the dead follower out of the ISR")
    cluster.kill(f"broker-{leader}")
    wait_for(lambda: partitions(cluster, "risky")[0]["leader"] == -1, SESSION_MS / 1000 + 15, "an offline partition")
    cluster.start(f"broker-{follower}")
    cluster.wait_healthy([f"broker-{follower}"])
    wait_for(lambda: partitions(cluster, "risky")[0]["leader"] == follower, 20,
             "the returning out-of-sync replica elected (unclean)")
    with Producer(brokers(cluster), acks=-1, delivery_timeout_ms=30000) as producer:  # the ISR is the new leader
        future = producer.send("risky", b"back", partition=0)
        producer.flush(30)
    assert future.exception() is None
    ensure_all_brokers(cluster)
