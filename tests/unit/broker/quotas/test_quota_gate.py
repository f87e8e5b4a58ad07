"""The client quotas at the LogService edge (broker/quotas): who is measured, the throttle in the answers, a
produce refused unappended while its user is throttled, a fetch answered empty, and quotas that change
while a stream is open. Time is a ManualClock; a fake stands in for the produce path."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from replog.broker.quotas.client_quotas import ClientQuotas
from replog.broker.quotas.edge import QuotaGate
from replog.broker.runtime.metrics import BrokerMetrics
from replog.common.clock import ManualClock
from replog.common.error_codes import ErrorCode
from replog.common.quotas.core.model import QuotaRecord, QuotaSnapshot
from replog.common.security.principal import Principal
from replog.v1 import log_pb2

ALICE, ADMIN, BROKER = Principal("user", "alice"), Principal("user", "admin"), Principal("broker", "2")
BATCH = b"x" * 1000


class FakeProduce:
    def __init__(self) -> None:
        self.appended = 0

    def produce(self, request):
        self.appended += len(request.partitions)
        return log_pb2.ProduceResponse(partitions=[log_pb2.ProducePartitionResponse(topic=p.topic, base_offset=7)
                                                   for p in request.partitions])

    def produce_async(self, request, answer):
        response = self.produce(request)
        answer(lambda: response)
        return None

    def expire_due(self) -> None:
        pass


def setup(entries=None, samples=11):
    clock, registry = ManualClock(), CollectorRegistry()
    quotas = ClientQuotas(clock, BrokerMetrics(registry), samples=samples, sample_ms=1000)
    quotas.replace(QuotaSnapshot(entries or {}))
    return clock, quotas, QuotaGate(quotas, principal_of=lambda context: context), registry


def request(*topics: str) -> log_pb2.ProduceRequest:
    return log_pb2.ProduceRequest(acks=-1, partitions=[log_pb2.ProducePartitionData(topic=t, record_batch=BATCH)
                                                       for t in topics])


def test_with_no_quota_a_produce_goes_straight_to_the_produce_path():
    _, _, gate, _ = setup()
    fake = FakeProduce()
    assert gate.produce_edge(ALICE, fake) is fake and gate.fetch(ALICE) is None


def test_services_are_never_measured_and_a_call_without_identity_is_anonymous():
    _, quotas, gate, _ = setup({None: QuotaRecord(1, 1)})
    fake = FakeProduce()
    assert gate.produce_edge(BROKER, fake) is fake and gate.stream_edge(BROKER, fake) is fake
    assert gate.fetch(BROKER) is None
    gate.produce_edge(None, fake).produce(request("t"))
    assert quotas.admit("produce", "User:ANONYMOUS", 1, 1).refused  # the default's 1 byte/s holds it


def test_a_produce_over_the_quota_is_answered_with_the_throttle_and_one_sent_meanwhile_is_refused_unappended():
    clock, _, gate, registry = setup({"User:alice": QuotaRecord(producer_byte_rate=10_000)})
    fake = FakeProduce()
    size = request("a", "b").ByteSize()
    first = gate.produce_edge(ALICE, fake).produce(request("a", "b"))
    assert first.throttle_time_ms == 0 and fake.appended == 2  # 10 s of allowance at first
    admitted = 1
    while not (answer := gate.produce_edge(ALICE, fake).produce(request("a", "b"))).throttle_time_ms:
        admitted += 1
    admitted += 1
    assert fake.appended == 2 * admitted and answer.partitions[0].base_offset == 7  # appended, then throttled
    throttle_ms = answer.throttle_time_ms
    assert abs(throttle_ms - (admitted * size * 1000 // 10_000 - 10_000)) <= 1  # until back at 10 KB/s

    clock.advance(throttle_ms // 2)
    refused = gate.produce_edge(ALICE, fake).produce(request("a", "b"))
    assert fake.appended == 2 * admitted  # nothing appended
    assert refused.throttle_time_ms == throttle_ms - throttle_ms // 2
    assert [p.error_code for p in refused.partitions] == [ErrorCode.THROTTLING_QUOTA_EXCEEDED] * 2
    assert [p.topic for p in refused.partitions] == ["a", "b"] and refused.partitions[0].base_offset == -1
    message = refused.partitions[0].error_message
    assert "User:alice" in message and "10000 bytes/s" in message and f"{refused.throttle_time_ms} ms" in message
    assert "nothing was appended" in message
    assert registry.get_sample_value("replog_broker_quota_refused_requests_total", {"quota": "produce"}) == 1
    assert registry.get_sample_value("replog_broker_quota_throttled_requests_total", {"quota": "produce"}) == 2

    clock.advance(throttle_ms)
    assert gate.produce_edge(ALICE, fake).produce(request("a")).partitions[0].error_code == ErrorCode.NONE
    assert gate.produce_edge(ADMIN, fake).produce(request("a")).throttle_time_ms == 0  # no quota applies to admin


def test_a_stream_s_requests_are_held_to_the_quota_of_the_moment():
    clock, quotas, gate, _ = setup()
    fake = FakeProduce()
    edge = gate.stream_edge(ALICE, fake)  # opened with no quota at all
    answers = []
    edge.produce_async(request("a"), lambda build: answers.append(build()))
    assert answers[-1].throttle_time_ms == 0

    quotas.replace(QuotaSnapshot({None: QuotaRecord(producer_byte_rate=100)}))  # set while the stream is open
    while not answers[-1].throttle_time_ms:
        edge.produce_async(request("a"), lambda build: answers.append(build()))
    appended = fake.appended
    assert edge.produce_async(request("a"), lambda build: answers.append(build())) is None
    assert answers[-1].partitions[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED and fake.appended == appended

    quotas.replace(QuotaSnapshot())  # lifted: the throttle ends at once
    edge.produce_async(request("a"), lambda build: answers.append(build()))
    assert answers[-1].partitions[0].error_code == ErrorCode.NONE and answers[-1].throttle_time_ms == 0


def test_a_fetch_reads_a_sample_s_worth_at_most_and_one_arriving_while_throttled_gets_no_records():
    clock, quotas, gate, registry = setup({None: QuotaRecord(consumer_byte_rate=5000),
                                           "User:alice": QuotaRecord(producer_byte_rate=1)}, samples=2)
    quota = gate.fetch(ALICE)  # alice's own quota is of produce only: the default's fetch quota holds her
    assert quota.throttled() is None and quota.bytes_max(1 << 20) == 5000 and quota.bytes_max(100) == 100
    assert quota.record(5000) == 0  # a sample's worth over the minimum span of one sample
    throttle_ms = gate.fetch(ALICE).record(5000)
    assert throttle_ms == 1000
    clock.advance(400)
    answer = gate.fetch(ALICE).throttled()
    assert answer == log_pb2.FetchResponse(throttle_time_ms=600)
    assert registry.get_sample_value("replog_broker_quota_refused_requests_total", {"quota": "fetch"}) == 1
    clock.advance(600)
    assert gate.fetch(ALICE).throttled() is None
    assert gate.fetch(ADMIN).throttled() is None  # every user has an allowance of its own


def test_a_quota_changed_while_throttled_re_times_the_throttle():
    clock, quotas, gate, _ = setup({None: QuotaRecord(producer_byte_rate=1000)}, samples=5)
    big = log_pb2.ProduceRequest(acks=1, partitions=[
        log_pb2.ProducePartitionData(topic="a", record_batch=b"x" * 20_000)])
    fake = FakeProduce()
    throttle_ms = gate.produce_edge(ALICE, fake).produce(big).throttle_time_ms
    assert throttle_ms > 15_000  # 20 KB at 1 KB/s, less the 4 s the window takes as past
    quotas.replace(QuotaSnapshot({None: QuotaRecord(producer_byte_rate=1000),
                                  "User:alice": QuotaRecord(producer_byte_rate=2000)}))  # her own, raised
    clock.advance(1000)
    left = gate.produce_edge(ALICE, fake).produce(request("a")).throttle_time_ms
    assert 0 < left < throttle_ms / 2  # what 20 KB owe at 2 KB/s
    quotas.replace(QuotaSnapshot({None: QuotaRecord(producer_byte_rate=1000),
                                  "User:alice": QuotaRecord(producer_byte_rate=10**6)}))
    answer = gate.produce_edge(ALICE, fake).produce(request("a"))
    assert answer.partitions[0].error_code == ErrorCode.NONE and answer.throttle_time_ms == 0
