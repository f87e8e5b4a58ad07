"""ProduceStream on real brokers: requests appended in the order sent while earlier ones still
wait for the HW, each answered by its request id; bad requests refused without ending the
stream; and the producer keeping several batches in flight still delivers in send order."""

from __future__ import annotations

import queue
import time

import grpc
import pytest

from replog.client import Consumer, Producer
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, log_pb2

from .broker_helpers import (
    batch_of,
    create_topic,
    describe,
    log_stub,
    wait_for,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.integration

E = common_pb2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("produce-stream"))
    try:
        cluster = factory(ClusterSpec(controllers=1, gateways=0))
        with zk_session(cluster) as zk:
            for topic in ("piped", "mixed", "ordered"):
                create_topic(zk, topic, {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
                wait_for_leader(cluster, zk, topic, 1, 30)
        for topic in ("piped", "mixed", "ordered"):
            wait_for(lambda t=topic: (d := describe(cluster, 1, t)) and d.leader and len(d.isr) == 3, 30,
                     f"the ISR of {topic}")
        yield cluster
    finally:
        factory.teardown()


def request(topic: str, batch: bytes, *, acks: int = -1) -> log_pb2.ProduceRequest:
    return log_pb2.ProduceRequest(acks=acks, timeout_ms=10_000, partitions=[
        log_pb2.ProducePartitionData(topic=topic, partition=0, record_batch=batch)])


def exchange(cluster, messages: list[log_pb2.ProduceStreamRequest]) -> dict[int, log_pb2.ProduceStreamResponse]:
    """Send every message at once on one stream, half-close it, and collect the answers by request id."""
    answers = {}
    for answer in log_stub(cluster, 1).ProduceStream(iter(messages), timeout=30):
        assert answer.request_id not in answers, "a request answered twice"
        answers[answer.request_id] = answer
    return answers


def test_pipelined_requests_are_appended_in_the_order_sent_and_answered_by_id(cluster):
    producer_id = log_stub(cluster, 1).InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1))
    count, per_batch = 40, 3
    messages = [
        log_pb2.ProduceStreamRequest(request_id=1000 + i, produce=request("piped", batch_of(
            [b"v%03d-%d" % (i, j) for j in range(per_batch)], producer_id=producer_id.producer_id,
            producer_epoch=producer_id.producer_epoch, base_sequence=i * per_batch)))
        for i in range(count)
    ]
    answers = exchange(cluster, messages)

    assert sorted(answers) == [1000 + i for i in range(count)]
    outcomes = [answers[1000 + i].produce.partitions[0] for i in range(count)]
    assert all(o.error_code == E.ERROR_CODE_NONE for o in outcomes), outcomes[:3]
    # Sequences were checked in the order sent: every batch follows the one before it.
    assert [o.base_offset for o in outcomes] == [i * per_batch for i in range(count)]
    assert describe(cluster, 1, "piped").high_watermark == count * per_batch


def test_a_bad_request_is_refused_alone_and_the_stream_goes_on(cluster):
    messages = [
        log_pb2.ProduceStreamRequest(request_id=1, produce=request("mixed", batch_of([b"first"]))),
        log_pb2.ProduceStreamRequest(request_id=2),  # no produce request in it
        log_pb2.ProduceStreamRequest(request_id=3, produce=request("mixed", batch_of([b"bad acks"]), acks=2)),
        log_pb2.ProduceStreamRequest(request_id=4, produce=request("mixed", b"\x00" * 80)),  # not a batch
        log_pb2.ProduceStreamRequest(request_id=5, produce=request("mixed", batch_of([b"acks 0"]), acks=0)),
        log_pb2.ProduceStreamRequest(request_id=6, produce=request("mixed", batch_of([b"last"]))),
    ]
    answers = exchange(cluster, messages)

    assert sorted(answers) == [1, 2, 3, 4, 5, 6]
    assert answers[2].error_code == E.ERROR_CODE_INVALID_REQUEST and "produce" in answers[2].error_message
    assert answers[3].produce.partitions[0].error_code == E.ERROR_CODE_INVALID_REQUIRED_ACKS
    assert answers[4].produce.partitions[0].error_code == E.ERROR_CODE_CORRUPT_RECORD
    assert not answers[5].produce.partitions  # acks=0: answered, with no outcome to tell
    assert answers[1].produce.partitions[0].base_offset == 0
    assert answers[6].produce.partitions[0].base_offset == 2  # after "first" and the acks=0 record
    wait_for(lambda: describe(cluster, 1, "mixed").high_watermark == 3, 10, "the three good records committed")


def test_a_producer_with_five_batches_in_flight_delivers_in_send_order(cluster):
    bootstrap = [p.address for p in cluster.of_role("broker")]
    values = [b"o%05d" % i for i in range(3000)]
    with Producer(bootstrap, acks=-1, linger_ms=0, batch_records_max=25, max_in_flight=5) as producer:
        futures = [producer.send("ordered", v, partition=0) for v in values]
        producer.flush(60)
        offsets = [f.result(timeout=1).offset for f in futures]
    assert offsets == list(range(len(values)))

    records = []
    with Consumer(bootstrap, "ordered") as consumer:
        deadline = time.monotonic() + 30
        while len(records) < len(values) and time.monotonic() < deadline:
            records += consumer.poll(500)
    assert [r.value for r in records] == values


def test_max_in_flight_is_bounded_by_what_a_broker_remembers_per_producer(cluster):
    bootstrap = [p.address for p in cluster.of_role("broker")]
    with pytest.raises(ValueError, match="max_in_flight must be 1 to 5 with idempotence"):
        Producer(bootstrap, acks=-1, max_in_flight=6)


def test_a_broker_refuses_a_stream_past_its_waiting_capacity_and_takes_one_again_when_one_closes(cluster_factory):
    # 20 handler threads: 16 kept for replication and the controller, so 10 may wait (wait_slots.py).
    small = cluster_factory(ClusterSpec(controllers=1, brokers=1, gateways=0,
                                        extra_args={"broker": ["--grpc-workers", "20"]}))
    with zk_session(small) as zk:
        create_topic(zk, "few", {0: (1,)})
        wait_for_leader(small, zk, "few", 1, 30)
    stub = log_stub(small, 1)

    def open_stream():
        requests = queue.SimpleQueue()
        answers = stub.ProduceStream(iter(requests.get, None), timeout=30)
        requests.put(log_pb2.ProduceStreamRequest(request_id=1, produce=request("few", batch_of([b"x"]), acks=1)))
        return requests, answers

    held = [open_stream() for _ in range(10)]
    for _, answers in held:
        assert next(answers).produce.partitions[0].error_code == E.ERROR_CODE_NONE
    _, refused = open_stream()
    with pytest.raises(grpc.RpcError) as caught:
        next(refused)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "retry" in caught.value.details()

    requests, answers = held.pop()
    requests.put(None)  # half-close: the broker ends the stream, giving its slot back before it ends
    assert list(answers) == []
    held.append(open_stream())
    assert next(held[-1][1]).produce.partitions[0].error_code == E.ERROR_CODE_NONE
    for requests, _ in held:
        requests.put(None)
