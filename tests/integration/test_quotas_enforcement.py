"""Client quotas enforced on a secure cluster: a producer and a consumer over their quota are held near it
(measured once the quota window has filled, over several seconds) and lose nothing, while the operator on
the same broker keeps its speed; a raw client that ignores the throttle time is refused while throttled
(produce: nothing appended) and gets no more for it; quotas changed live apply to the next request.

Each test has a user of its own (a certificate from the session's CA), so no test inherits another's
throttle. QUOTA is 100 KiB/s, far below what this machine moves when it is busy. The broker measures over
a window of 2 one-second samples (the default is 11): a sampled window lets a user through in bursts of up
to the window's allowance, one each time the sample holding the last burst is forgotten (as Kafka's does;
docs/quotas.md), so a rate measured over a span only a few windows long swings around the quota by up to
a window's worth (with 5 samples, 10 s measured right after the first window gave up to 1.33 times the
quota). With 2 samples the bursts are a second's worth and 10 s measure the quota within a few percent."""

from __future__ import annotations

import threading
import time
import urllib.request

import grpc
import pytest

from replog.client import EARLIEST, Consumer, Producer
from replog.common.error_codes import ErrorCode
from replog.common.security.credentials import open_channel
from replog.common.security.principal import Principal
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2, admin_pb2_grpc, log_pb2, log_pb2_grpc

from .broker_helpers import batch_of, log_stub, wait_for_leader, zk_session
from .gateway_helpers import cli_runner
from .tls_helpers import session_certificate

pytestmark = pytest.mark.integration

QUOTA = 100 * 1024            # bytes per second
WINDOW_SAMPLES = 2            # --quota-window-num; samples of 1 s
WARM_S = 2 * WINDOW_SAMPLES   # the first window's allowance is spent and paid for by then
MEASURE_S = 10.0
RATE_HIGH = 1.25              # not far above the quota...
RATE_LOW = 0.4                # ...and progress made, on a loaded machine too
APPLY_DEADLINE_S = 10.0       # a quota change reaches the broker through one ZooKeeper watch
VALUE = 1000                  # bytes per record
TOPICS = ("produced", "prefilled", "raw", "live", "operator")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("quotas-enforced"))
    cluster = factory(ClusterSpec(controllers=1, brokers=1, gateways=1,
                                  extra_args={"broker": ["--quota-window-num", str(WINDOW_SAMPLES)]}))
    admin = admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address))
    for topic in TOPICS:
        admin.CreateTopic(admin_pb2.CreateTopicRequest(name=topic, partitions=1, replication_factor=1), timeout=30)
        with zk_session(cluster) as zk:
            wait_for_leader(cluster, zk, topic, 1, 30)
    bindings = [admin_pb2.AclBinding(principal="User:*", resource_type=admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
                                     pattern_type=admin_pb2.ACL_PATTERN_TYPE_LITERAL, resource_name="*",
                                     operation=operation, permission=admin_pb2.ACL_PERMISSION_ALLOW)
                for operation in (admin_pb2.ACL_OPERATION_PRODUCE, admin_pb2.ACL_OPERATION_CONSUME)]
    admin.CreateAcls(admin_pb2.CreateAclsRequest(bindings=bindings), timeout=10)
    yield cluster
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def user_files(name: str, tmp_path):
    return session_certificate(Principal("user", name), tmp_path / name)


def broker(cluster) -> str:
    return cluster.processes["broker-1"].address


def set_quota(replog, user: str, *argv: str) -> None:
    code, _, err = replog("quotas", "alter", "--user", user, *argv)
    assert code == 0, err


def eventually(check, what: str, deadline_s: float = APPLY_DEADLINE_S):
    deadline = time.monotonic() + deadline_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {deadline_s} s: {what}"
        time.sleep(0.1)


def end_offset(cluster, topic: str) -> int:
    reply = log_stub(cluster, 1).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
        log_pb2.ListOffsetsPartition(topic=topic, partition=0, spec=log_pb2.OFFSET_SPEC_LATEST)]), timeout=10)
    return reply.partitions[0].offset


def scrape(cluster) -> str:
    port = cluster.processes["broker-1"].metrics_port
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def metric(text: str, name: str, quota: str) -> float:
    for line in text.splitlines():
        if line.startswith(f'{name}{{quota="{quota}"}}'):
            return float(line.split()[-1])
    return 0.0


def rate_in_window(events: list[tuple[float, int]], start: float) -> float:
    """Bytes per second of the (time, bytes) events in [start + WARM_S, start + WARM_S + MEASURE_S)."""
    begin = start + WARM_S
    return sum(n for at, n in events if begin <= at < begin + MEASURE_S) / MEASURE_S


def value(seq: int) -> bytes:
    return b"%010d" % seq + b"." * (VALUE - 10)


def produce_for(producer: Producer, topic: str, seconds: float) -> tuple[list[tuple[float, int]], int, float]:
    """Send as fast as the producer takes records, 16 at a time, for `seconds`: (ack time, bytes) per batch
    acknowledged, the records sent, and when sending began."""
    acked: list[tuple[float, int]] = []
    lock = threading.Lock()
    sent, start = 0, time.monotonic()

    def on_ack(future, count=0):
        if future.exception() is None:
            with lock:
                acked.append((time.monotonic(), count * VALUE))

    while time.monotonic() < start + seconds:
        values = [value(sent + i) for i in range(16)]
        future = producer.send_batch(topic, values, partition=0)
        future.add_done_callback(lambda f, n=len(values): on_ack(f, n))
        sent += len(values)
    producer.flush(timeout_s=120)
    return acked, sent, start


def read_all(cluster, topic: str, count: int) -> list[bytes]:
    """The first `count` values of the topic, read as the operator."""
    out: list[bytes] = []
    with Consumer([broker(cluster)], topic, start=EARLIEST, iteration_timeout_ms=20_000) as consumer:
        for record in consumer:
            out.append(record.value)
            if len(out) == count:
                break
    return out


def test_a_producer_over_its_quota_is_held_near_it_loses_nothing_and_the_operator_keeps_its_speed(
        cluster, replog, tmp_path):
    set_quota(replog, "alice", "--producer-byte-rate", str(QUOTA))
    throttled_before = metric(scrape(cluster), "replog_broker_quota_throttled_requests_total", "produce")
    alice = Producer([broker(cluster)], tls=user_files("alice", tmp_path), batch_bytes_max=16 * 1024, linger_ms=5,
                     buffered_records_max=256)
    result = {}

    def run() -> None:
        result["acked"], result["sent"], result["start"] = produce_for(alice, "produced", WARM_S + MEASURE_S)

    producing = threading.Thread(target=run)
    producing.start()
    try:
        # Once alice is held back, the operator (a super user with no quota) produces on the same broker.
        eventually(lambda: metric(scrape(cluster), "replog_broker_quota_throttled_requests_total", "produce")
                   > throttled_before, "alice to be throttled", deadline_s=WARM_S + MEASURE_S)
        started = time.monotonic()
        with Producer([broker(cluster)]) as operator:
            for i in range(200):
                operator.send_batch("operator", [value(i)] * 15, partition=0)
            operator.flush(timeout_s=60)
        operator_rate = 200 * 15 * VALUE / (time.monotonic() - started)
        answers = []
        for _ in range(3):
            reply = log_stub(cluster, 1).Produce(log_pb2.ProduceRequest(acks=1, partitions=[
                log_pb2.ProducePartitionData(topic="operator", partition=0, record_batch=batch_of([b"o" * 50_000]))]),
                timeout=10)
            answers.append((reply.partitions[0].error_code, reply.throttle_time_ms))
    finally:
        producing.join(WARM_S + MEASURE_S + 150)
        alice.close()
    assert operator_rate >= 3 * QUOTA, operator_rate  # the operator, on the same broker, is not held
    assert answers == [(ErrorCode.NONE, 0)] * 3
    rate = rate_in_window(result["acked"], result["start"])
    assert RATE_LOW * QUOTA <= rate <= RATE_HIGH * QUOTA, f"alice produced {rate:.0f} bytes/s under a {QUOTA} quota"
    sent = result["sent"]
    assert read_all(cluster, "produced", sent) == [value(i) for i in range(sent)]  # nothing lost or written twice
    assert end_offset(cluster, "produced") == sent


def test_a_consumer_over_its_quota_is_held_near_it_and_the_operator_reads_at_full_speed(cluster, replog, tmp_path):
    records = 3000  # 3 MB: half a minute at the quota
    with Producer([broker(cluster)], batch_bytes_max=256 * 1024) as operator:
        for i in range(0, records, 100):
            operator.send_batch("prefilled", [value(i + j) for j in range(100)], partition=0)
        operator.flush(timeout_s=60)
    set_quota(replog, "bob", "--consumer-byte-rate", str(QUOTA))
    started = time.monotonic()
    assert read_all(cluster, "prefilled", records) == [value(i) for i in range(records)]
    assert records * VALUE / (time.monotonic() - started) >= 3 * QUOTA  # the operator's read is not held

    received: list[tuple[float, int]] = []
    offsets: list[int] = []
    with Consumer([broker(cluster)], "prefilled", start=EARLIEST, tls=user_files("bob", tmp_path)) as bob:
        start = time.monotonic()
        while time.monotonic() < start + WARM_S + MEASURE_S:
            batch = bob.poll(timeout_ms=200)
            received.append((time.monotonic(), sum(len(r.value) for r in batch)))
            offsets += [r.offset for r in batch]
    rate = rate_in_window(received, start)
    assert RATE_LOW * QUOTA <= rate <= RATE_HIGH * QUOTA, f"bob fetched {rate:.0f} bytes/s under a {QUOTA} quota"
    assert offsets == list(range(len(offsets)))  # in order, none skipped


def test_a_client_that_ignores_the_throttle_is_refused_while_throttled_and_gains_nothing(cluster, replog, tmp_path):
    set_quota(replog, "carol", "--producer-byte-rate", str(QUOTA), "--consumer-byte-rate", str(QUOTA))
    before = scrape(cluster)
    channel = open_channel(broker(cluster), user_files("carol", tmp_path))
    carol = log_pb2_grpc.LogServiceStub(channel)
    try:
        batch = batch_of([b"c" * 10_000])
        request = log_pb2.ProduceRequest(acks=1, partitions=[
            log_pb2.ProducePartitionData(topic="raw", partition=0, record_batch=batch)])
        first = end_offset(cluster, "raw")
        accepted: list[tuple[float, int]] = []
        refusals = 0
        start = time.monotonic()
        while time.monotonic() < start + WARM_S + MEASURE_S:  # as fast as the broker answers, never waiting
            reply = carol.Produce(request, timeout=10)
            code = reply.partitions[0].error_code
            if code == ErrorCode.NONE:
                accepted.append((time.monotonic(), request.ByteSize()))
                continue
            assert code == ErrorCode.THROTTLING_QUOTA_EXCEEDED and reply.throttle_time_ms > 0, reply
            message = reply.partitions[0].error_message
            assert "User:carol" in message and "nothing was appended" in message
            assert f"{reply.throttle_time_ms} ms" in message
            refusals += 1
        rate = rate_in_window(accepted, start)
        assert RATE_LOW * QUOTA <= rate <= RATE_HIGH * QUOTA, f"carol got {rate:.0f} bytes/s in"
        assert refusals > len(accepted) > 0
        assert end_offset(cluster, "raw") - first == len(accepted)  # a refused produce appended nothing

        fetch = log_pb2.FetchRequest(max_bytes=1 << 20, partitions=[
            log_pb2.FetchPartition(topic="raw", partition=0, fetch_offset=first, current_leader_epoch=-1)])
        answers = [carol.Fetch(fetch, timeout=10) for _ in range(20)]  # far more than the window allows at once
        throttled = [a for a in answers if not a.partitions]
        assert throttled and all(a.throttle_time_ms > 0 for a in throttled)
        assert sum(len(p.records) for a in answers for p in a.partitions) <= (WINDOW_SAMPLES + 1) * QUOTA
        # Fetching on while throttled, carol gets nothing until the throttle time has passed, then records.
        assert eventually(lambda: carol.Fetch(fetch, timeout=10).partitions, "records after the throttle",
                          deadline_s=throttled[-1].throttle_time_ms / 1000 + APPLY_DEADLINE_S)
    finally:
        channel.close()
    after = scrape(cluster)
    for quota in ("produce", "fetch"):
        assert (metric(after, "replog_broker_quota_refused_requests_total", quota)
                > metric(before, "replog_broker_quota_refused_requests_total", quota)), quota
        assert (metric(after, "replog_broker_quota_throttled_requests_total", quota)
                > metric(before, "replog_broker_quota_throttled_requests_total", quota)), quota


def test_quotas_changed_live_apply_to_the_next_request(cluster, replog, tmp_path):
    channel = open_channel(broker(cluster), user_files("dave", tmp_path))
    dave = log_pb2_grpc.LogServiceStub(channel)
    big = log_pb2.ProduceRequest(acks=1, partitions=[
        log_pb2.ProducePartitionData(topic="live", partition=0, record_batch=batch_of([b"d" * 200_000]))])
    small = log_pb2.ProduceRequest(acks=1, partitions=[
        log_pb2.ProducePartitionData(topic="live", partition=0, record_batch=batch_of([b"d"]))])

    def answer(request) -> tuple[int, int]:
        reply = dave.Produce(request, timeout=10)
        return reply.partitions[0].error_code, reply.throttle_time_ms

    def refused() -> bool:
        return answer(small)[0] == ErrorCode.THROTTLING_QUOTA_EXCEEDED

    try:
        assert answer(big) == (ErrorCode.NONE, 0)  # no quota yet
        set_quota(replog, "dave", "--producer-byte-rate", "10000")
        # 200 KB at 10 KB/s owe 20 s, less the 1 s the window takes as past: one big request is throttled 19 s
        eventually(lambda: answer(big)[1] > 10_000, "dave's quota to apply")
        assert refused()
        set_quota(replog, "dave", "--delete-config", "producer_byte_rate")
        eventually(lambda: not refused(), "the removal to end the throttle")
        assert answer(big) == (ErrorCode.NONE, 0)

        code, _, err = replog("quotas", "alter", "--default", "--producer-byte-rate", "10000")
        assert code == 0, err
        eventually(lambda: answer(big)[1] > 10_000, "the default to apply to dave")
        assert refused()
        set_quota(replog, "dave", "--producer-byte-rate", str(100 * 1024 * 1024))  # his own, far higher
        eventually(lambda: not refused(), "his own raised quota to end the throttle")
        assert answer(big) == (ErrorCode.NONE, 0)
    finally:
        replog("quotas", "alter", "--default", "--delete-config", "producer_byte_rate")
        channel.close()
