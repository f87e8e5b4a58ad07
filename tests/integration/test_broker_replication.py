"""The broker's happy path with real processes: acks=all through three replicas,
consumers reading in order, metadata and offsets, and the traces and metrics
a failover investigation relies on."""

from __future__ import annotations

import json
import urllib.request

import pytest

from replog.client import Consumer, Producer
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, log_pb2

from .broker_helpers import (
    create_topic,
    describe,
    log_stub,
    partition_state,
    wait_caught_up,
    wait_for,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.integration

RECORDS = 10_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("broker-replication"))
    yield factory(ClusterSpec(controllers=1, gateways=0))
    factory.teardown()


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def test_10000_records_acks_all_through_three_replicas_are_consumed_in_order(cluster):
    with zk_session(cluster) as zk:
        create_topic(zk, "orders", {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "orders", 1, 30)
    with Producer(bootstrap(cluster), acks=-1) as producer:
        futures = [producer.send("orders", f"record-{i}".encode(), partition=0) for i in range(RECORDS)]
        producer.flush(60)
        offsets = [f.result().offset for f in futures]
    assert offsets == list(range(RECORDS))
    with Consumer(bootstrap(cluster), "orders") as consumer:
        seen = []
        for _ in range(200):
            seen += consumer.poll(500)
            if len(seen) >= RECORDS:
                break
    assert [r.offset for r in seen] == list(range(RECORDS))
    assert [r.value for r in seen] == [f"record-{i}".encode() for i in range(RECORDS)]
    # Every replica holds the same log, and the HW covers it everywhere.
    wait_caught_up(cluster, (1, 2, 3), "orders", RECORDS, 10)
    sizes = {describe(cluster, b, "orders").size_bytes for b in (1, 2, 3)}
    assert len(sizes) == 1


def test_metadata_list_offsets_and_decoded_fetch(cluster):
    with zk_session(cluster) as zk:
        create_topic(zk, "meta", {0: (2, 3, 1), 1: (3, 1, 2)})
        # Broker 3 must also know it follows partition 0: it is asked for it below.
        wait_for_leader(cluster, zk, "meta", 2, 30, partition=0, followers=(3,))
        wait_for_leader(cluster, zk, "meta", 3, 30, partition=1)
    stub = log_stub(cluster, 1)
    reply = wait_for(lambda: (r := stub.Metadata(log_pb2.MetadataRequest(topics=["meta", "nope"]), timeout=5))
                     and len(r.topics[0].partitions) == 2 and r, 10, "metadata for meta")
    assert sorted(b.broker_id for b in reply.brokers) == [1, 2, 3]
    assert reply.controller_id == 1
    meta, nope = reply.topics
    assert [(p.partition, p.leader, list(p.replicas)) for p in meta.partitions] == [(0, 2, [2, 3, 1]), (1, 3, [3, 1, 2])]
    assert nope.error_code == common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION

    leader = log_stub(cluster, 2)
    produced = leader.Produce(log_pb2.ProduceRequest(acks=-1, partitions=[log_pb2.ProducePartitionData(
        topic="meta", partition=0, records=[common_pb2.Record(key=b"k", value=b"v1", timestamp_ms=1000),
                                            common_pb2.Record(key_is_null=True, value=b"v2", timestamp_ms=2000)])]),
        timeout=20).partitions[0]
    assert produced.error_code == common_pb2.ERROR_CODE_NONE and produced.base_offset == 0

    def offset(spec, timestamp_ms=0):
        result = leader.ListOffsets(log_pb2.ListOffsetsRequest(partitions=[log_pb2.ListOffsetsPartition(
            topic="meta", partition=0, spec=spec, timestamp_ms=timestamp_ms, current_leader_epoch=-1)]),
            timeout=5).partitions[0]
        assert result.error_code == common_pb2.ERROR_CODE_NONE, result
        return result.offset

    assert offset(log_pb2.OFFSET_SPEC_EARLIEST) == 0
    assert offset(log_pb2.OFFSET_SPEC_LATEST) == 2
    assert offset(log_pb2.OFFSET_SPEC_TIMESTAMP, 1500) == 1
    assert offset(log_pb2.OFFSET_SPEC_TIMESTAMP, 9999) == -1
    fetched = leader.Fetch(log_pb2.FetchRequest(max_wait_ms=0, decode_records=True, partitions=[
        log_pb2.FetchPartition(topic="meta", partition=0, fetch_offset=1, current_leader_epoch=-1)]),
        timeout=5).partitions[0]
    assert fetched.high_watermark == 2
    assert [(r.offset, r.key_is_null, r.value) for r in fetched.decoded_records] == [(1, True, b"v2")]
    # A follower does not serve consumers.
    not_leader = log_stub(cluster, 3).Fetch(log_pb2.FetchRequest(partitions=[
        log_pb2.FetchPartition(topic="meta", partition=0, fetch_offset=0, current_leader_epoch=-1)]), timeout=5)
    assert not_leader.partitions[0].error_code == common_pb2.ERROR_CODE_NOT_LEADER
    # ... and counts the answer, by kind and code, for the fetch error alert (deploy/prometheus/).
    scraped = urllib.request.urlopen(f"http://127.0.0.1:{cluster.processes['broker-3'].metrics_port}/metrics",
                                     timeout=5).read().decode()
    counted = [line for line in scraped.splitlines() if line.startswith("replog_broker_fetch_partition_errors_total{")
               and 'error="NOT_LEADER"' in line and 'kind="consumer"' in line]
    assert counted and float(counted[0].split()[-1]) >= 1, counted


def test_long_poll_fetch_answers_when_records_arrive(cluster):
    import threading
    import time

    with zk_session(cluster) as zk:
        create_topic(zk, "poll", {0: (3, 1, 2)})
        wait_for_leader(cluster, zk, "poll", 3, 30)
    leader = log_stub(cluster, 3)

    def produce_later():
        time.sleep(0.5)
        leader.Produce(log_pb2.ProduceRequest(acks=-1, partitions=[log_pb2.ProducePartitionData(
            topic="poll", partition=0, records=[common_pb2.Record(value=b"late")])]), timeout=10)

    threading.Thread(target=produce_later).start()
    started = time.monotonic()
    reply = leader.Fetch(log_pb2.FetchRequest(max_wait_ms=10_000, min_bytes=1, partitions=[
        log_pb2.FetchPartition(topic="poll", partition=0, fetch_offset=0, current_leader_epoch=-1)]), timeout=15)
    waited_s = time.monotonic() - started
    assert reply.partitions[0].records, reply
    assert 0.4 < waited_s < 5, waited_s


def test_become_leader_and_follower_spans_join_the_controllers_trace(cluster):
    with zk_session(cluster) as zk:
        create_topic(zk, "traced", {0: (1, 2, 3)})
        state = wait_for_leader(cluster, zk, "traced", 1, 30)
    assert state.leader_epoch == 0

    def spans():
        found = []
        for path in cluster.trace_dir.glob("*.jsonl"):
            for line in path.read_text().splitlines():
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue  # the last line of a file a service is writing may be torn (as the CLI reads them)
        return found

    def become_spans_and_parents():
        everything = spans()
        by_id = {s["span_id"]: s for s in everything}
        found = [s for s in everything if s["name"] in ("broker.become_leader", "broker.become_follower")
                 and "traced-0" in s["attributes"].get("partitions", [])]
        # Span files are written in batches: wait for the call's spans on both sides too.
        complete = len(found) == 3 and all(s["parent_span_id"] in by_id and
                                           by_id[s["parent_span_id"]]["parent_span_id"] in by_id for s in found)
        return (found, by_id) if complete else None

    found, by_id = wait_for(become_spans_and_parents, 15, "three become_* spans for traced-0 and their parents")
    assert sorted(s["name"] for s in found) == ["broker.become_follower"] * 2 + ["broker.become_leader"]
    for span in found:
        server = by_id[span["parent_span_id"]]  # the broker's side of the controller's LeaderAndIsr call
        client = by_id[server["parent_span_id"]]
        assert (server["name"], server["kind"]) == ("replog.v1.BrokerControlService/LeaderAndIsr", "SERVER"), server
        assert (client["name"], client["kind"]) == (server["name"], "CLIENT"), client
        assert client["resource"]["service.name"] == "replog-controller"
        assert span["trace_id"] == server["trace_id"] == client["trace_id"]
        assert span["resource"]["service.name"] == "replog-broker"


def test_broker_metrics_are_exposed(cluster):
    with zk_session(cluster) as zk:
        if partition_state(zk, "orders") is None:
            create_topic(zk, "orders", {0: (1, 2, 3)})
        wait_for_leader(cluster, zk, "orders", 1, 30)
    port = cluster.processes["broker-1"].metrics_port

    def scrape() -> str:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()

    def leader_count(text: str) -> float:
        line = next(line for line in text.splitlines() if line.startswith("replog_broker_leader_partitions "))
        return float(line.split()[1])

    text = wait_for(lambda: (t := scrape()) and leader_count(t) >= 1 and t, 10,
                    "broker 1's leader count to be 1 or more")
    for name in ("replog_broker_under_replicated_partitions", "replog_broker_under_min_isr_partitions",
                 "replog_broker_at_min_isr_partitions", "replog_broker_offline_replicas",
                 "replog_broker_leader_partitions", "replog_broker_replicas", "replog_broker_isr_shrinks_total",
                 "replog_broker_isr_expands_total", "replog_broker_failed_isr_updates_total",
                 "replog_broker_produce_requests_total", "replog_broker_produce_duration_seconds_bucket",
                 "replog_broker_fetch_requests_total"):
        assert name in text, name


def test_producer_send_batch_and_send_keep_order_and_offsets(cluster):
    with zk_session(cluster) as zk:
        create_topic(zk, "mixed", {0: (2, 3, 1)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "mixed", 2, 30)
    with Producer(bootstrap(cluster), acks=-1, linger_ms=5) as producer:
        first = producer.send_batch("mixed", [b"a0", b"a1", b"a2"], partition=0)
        single = producer.send("mixed", b"b0", partition=0)
        second = producer.send_batch("mixed", [b"c0", b"c1"], partition=0)
        producer.flush(30)
        assert [first.result().offset, single.result().offset, second.result().offset] == [0, 3, 4]
    with Consumer(bootstrap(cluster), "mixed") as consumer:
        seen = []
        for _ in range(40):
            seen += consumer.poll(250)
            if len(seen) >= 6:
                break
    assert [r.value for r in seen] == [b"a0", b"a1", b"a2", b"b0", b"c0", b"c1"]
