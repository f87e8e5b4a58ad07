"""The LogService's ACL checks: a refused request changes nothing and answers PERMISSION_DENIED
naming who, what and which topic; a ProduceStream answers what came before its first refused
request, appends nothing after it, and ends with the refusal; Metadata of every topic shows only
the describable ones. Fakes stand in for the produce path and the caller's certificate."""

from __future__ import annotations

import grpc
import pytest
from prometheus_client import CollectorRegistry

from replog.broker.entrypoints.log_servicer import LogServicer
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.quotas.client_quotas import ClientQuotas
from replog.broker.quotas.edge import QuotaGate
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.wait_slots import WaitSlots
from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.core.model import AclBinding
from replog.common.acls.enforcement import Caller, Enforcer
from replog.common.clock import SystemClock
from replog.common.security.principal import Principal
from replog.v1 import broker_control_pb2, log_pb2

ALICE = Caller("User:alice", False)


class Aborted(Exception):
    pass


class FakeContext:
    def __init__(self, caller: Caller) -> None:
        self.caller = caller
        self.status = self.message = None

    def abort(self, status, message):
        self.status, self.message = status, message
        raise Aborted(message)

    def is_active(self) -> bool:
        return True

    def add_callback(self, callback) -> None:
        pass


class FakeProduce:
    """Answers every produce at once and remembers the topics it was asked to append to."""

    def __init__(self) -> None:
        self.appended: list[str] = []

    def produce(self, request):
        self.appended += [p.topic for p in request.partitions]
        return log_pb2.ProduceResponse()

    def produce_async(self, request, answer):
        self.appended += [p.topic for p in request.partitions]
        answer(lambda: log_pb2.ProduceResponse())
        return None

    def expire_due(self) -> None:
        pass


def servicer(produce: FakeProduce, metadata: MetadataCache | None = None) -> LogServicer:
    authorizer = Authorizer((), [AclBinding("User:alice", "topic", "literal", "mine", "produce", "allow")])
    return LogServicer(
        broker_id=1, produce=produce, lookup=lambda tp: None, hosted=lambda: [], metadata=metadata or MetadataCache(),
        producer_ids=None, clock=SystemClock(), metrics=None, fetch_bytes_max=1 << 20, stopping=lambda: False,
        wait_slots=WaitSlots(32), enforcer=Enforcer(authorizer, enabled=True, caller=lambda context: context.caller),
        quotas=QuotaGate(ClientQuotas(SystemClock(), BrokerMetrics(CollectorRegistry()), samples=11, sample_ms=1000),
                         principal_of=lambda context: Principal("user", context.caller.principal.removeprefix("User:"))),
    )


def produce(*topics: str) -> log_pb2.ProduceRequest:
    return log_pb2.ProduceRequest(acks=1, partitions=[log_pb2.ProducePartitionData(topic=t) for t in topics])


def test_a_refused_produce_appends_nothing_and_names_who_what_and_where():
    fake = FakeProduce()
    context = FakeContext(ALICE)
    with pytest.raises(Aborted):
        servicer(fake).Produce(produce("mine", "theirs"), context)
    assert fake.appended == []
    assert context.status == grpc.StatusCode.PERMISSION_DENIED
    assert "User:alice" in context.message and "produce" in context.message and "'theirs'" in context.message
    servicer(fake).Produce(produce("mine"), FakeContext(ALICE))
    assert fake.appended == ["mine"]


def test_a_produce_stream_stops_at_its_first_refused_request():
    fake = FakeProduce()
    context = FakeContext(ALICE)
    requests = [log_pb2.ProduceStreamRequest(request_id=i, produce=produce(topic))
                for i, topic in enumerate(["mine", "mine", "theirs", "mine"])]
    answers = []
    with pytest.raises(Aborted):
        for answer in servicer(fake).ProduceStream(iter(requests), context):
            answers.append(answer.request_id)
    assert sorted(answers) == [0, 1]
    assert fake.appended == ["mine", "mine"]
    assert context.status == grpc.StatusCode.PERMISSION_DENIED and "'theirs'" in context.message


def test_fetch_and_list_offsets_need_consume_and_describe():
    context = FakeContext(ALICE)
    with pytest.raises(Aborted):
        servicer(FakeProduce()).Fetch(log_pb2.FetchRequest(partitions=[log_pb2.FetchPartition(topic="mine")]),
                                      context)
    assert "consume" in context.message
    servicer(FakeProduce()).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
        log_pb2.ListOffsetsPartition(topic="mine", spec=log_pb2.OFFSET_SPEC_LATEST)]), FakeContext(ALICE))
    with pytest.raises(Aborted):
        servicer(FakeProduce()).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
            log_pb2.ListOffsetsPartition(topic="theirs")]), FakeContext(ALICE))


def test_init_producer_id_needs_produce_somewhere():
    context = FakeContext(Caller("User:bob", False))
    with pytest.raises(Aborted):
        servicer(FakeProduce()).InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                                               context)
    assert context.status == grpc.StatusCode.PERMISSION_DENIED and "User:bob" in context.message
    bumped = servicer(FakeProduce()).InitProducerId(log_pb2.InitProducerIdRequest(producer_id=5, producer_epoch=0),
                                                    FakeContext(ALICE))
    assert (bumped.producer_id, bumped.producer_epoch) == (5, 1)


def test_services_are_not_subject_to_topic_acls():
    fake = FakeProduce()
    servicer(fake).Produce(produce("theirs"), FakeContext(Caller("broker:2", True)))
    assert fake.appended == ["theirs"]


def test_metadata_of_every_topic_shows_the_describable_ones_and_a_named_one_needs_describe():
    cache = MetadataCache()
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=1, full=True, partitions=[
        broker_control_pb2.PartitionState(topic=t, partition=0, leader=1, leader_epoch=1, isr=[1], replicas=[1])
        for t in ("mine", "theirs")]))
    reply = servicer(FakeProduce(), cache).Metadata(log_pb2.MetadataRequest(), FakeContext(ALICE))
    assert [t.name for t in reply.topics] == ["mine"]
    context = FakeContext(ALICE)
    with pytest.raises(Aborted):
        servicer(FakeProduce(), cache).Metadata(log_pb2.MetadataRequest(topics=["theirs"]), context)
    assert "describe" in context.message and "'theirs'" in context.message
    reply = servicer(FakeProduce(), cache).Metadata(log_pb2.MetadataRequest(), FakeContext(Caller("gateway:1", True)))
    assert [t.name for t in reply.topics] == ["mine", "theirs"]
