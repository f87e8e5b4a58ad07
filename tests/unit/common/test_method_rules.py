"""The method table: every method a server offers has a rule, each rule is well formed, service
identities have their roles' rights and no more, and users get what their ACLs allow (checked
through the real interceptor around the broker's real LogService handlers)."""

from __future__ import annotations

import importlib
import pkgutil

import grpc
import pytest
from grpc_health.v1 import health_pb2
from prometheus_client import CollectorRegistry
from grpc_reflection.v1alpha import reflection_pb2

import replog.v1
from replog.broker.entrypoints.log_servicer import LogServicer
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.quotas.client_quotas import ClientQuotas
from replog.broker.quotas.edge import QuotaGate
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.wait_slots import WaitSlots
from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.core.model import AclBinding
from replog.common.acls.enforcement import Enforcer
from replog.common.clock import SystemClock
from replog.common.security.authorization import Authorizer as AuthorizationInterceptor
from replog.common.security.principal import Principal
from replog.common.security.rules import PERMISSION_DENIED, RULES, UNAUTHENTICATED, decide, decide_speaks_for
from replog.v1 import broker_control_pb2, log_pb2, log_pb2_grpc
from tests.unit.common.edge_fakes import Aborted, FakeContext, handlers_of, invoke

KINDS = ("controller", "broker", "gateway", "user")
ALICE = "replog://user/alice"


def _services():
    modules = [importlib.import_module(f"replog.v1.{m.name}") for m in pkgutil.iter_modules(replog.v1.__path__)
               if m.name.endswith("_pb2")]
    modules += [health_pb2, reflection_pb2]
    return [s for m in modules for s in m.DESCRIPTOR.services_by_name.values()]


def _methods():
    return [(f"/{s.full_name}/{m.name}", m) for s in _services() for m in s.methods]


def test_every_method_of_every_service_has_a_rule():
    """A new method is refused to everyone until rules.py says who may call it: this names the ones missing."""
    methods = {path for path, _ in _methods()}
    assert "/replog.v1.ControllerService/LogDirsOffline" in methods
    missing = sorted(methods - set(RULES))
    assert not missing, f"methods without a rule in security/rules.py: {missing}"


def test_no_rule_names_a_method_that_does_not_exist():
    methods = {path for path, _ in _methods()}
    methods.add("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")  # served by newer grpcio
    assert not set(RULES) - methods


@pytest.mark.parametrize("path, method", _methods(), ids=[p for p, _ in _methods()])
def test_each_rule_reads_only_fields_its_request_has(path, method):
    """Speaks-for fields exist, and the ACL needs and trims run on an empty request and answer."""
    rule = RULES[path]
    assert rule.services or rule.user is not None, f"{path}: a rule that admits no one"
    request = _message_class(method.input_type)()
    if rule.speaks_for:
        assert isinstance(_read(request, rule.speaks_for), int)
        assert rule.services == {"broker"}, "only brokers speak for a broker"
    enforcer = Enforcer(Authorizer())
    if rule.user is not None:
        assert rule.user.text
        rule.user.refusal(enforcer, "User:nobody", _first(request, method))
    if rule.trim is not None:
        rule.trim(enforcer, "User:nobody", request, _message_class(method.output_type)())


def _message_class(descriptor):
    from google.protobuf import message_factory
    return message_factory.GetMessageClass(descriptor)


def _read(message, dotted: str):
    for part in dotted.split("."):
        message = getattr(message, part)
    return message


def _first(request, method):
    return request


@pytest.mark.parametrize("method, allowed", [
    ("/replog.v1.BrokerControlService/LeaderAndIsr", {"controller"}),
    ("/replog.v1.ReplicationService/ReplicaFetchStream", {"broker"}),
    ("/replog.v1.ControllerService/AlterPartition", {"broker"}),
    ("/replog.v1.ControllerService/LogDirsOffline", {"broker"}),
    ("/replog.v1.LogService/Produce", {"user"}),
    ("/replog.v1.LogService/DescribeReplicas", {"gateway", "user"}),
    ("/replog.v1.LogService/AdvanceLogStartOffset", {"gateway", "user"}),
    ("/replog.v1.GroupService/OffsetFetch", {"gateway", "user"}),
    ("/replog.v1.AdminService/CreateAcls", {"user"}),
    ("/replog.v1.AdminService/CreateTopic", {"user"}),
    ("/grpc.health.v1.Health/Check", {"controller", "broker", "gateway", "user"}),
    ("/replog.v1.SomethingNew/Call", set()),
])
def test_each_method_admits_exactly_its_kinds(method, allowed):
    for kind in KINDS:
        refusal = decide(Principal(kind, "7"), method)
        assert (refusal is None) == (kind in allowed), (kind, method)
        if refusal is not None:
            assert refusal.code == PERMISSION_DENIED and method in refusal.message


def test_no_service_identity_may_administer_the_cluster():
    admin = [path for path in RULES if path.startswith("/replog.v1.AdminService/")]
    assert len(admin) >= 18
    for path in admin:
        for kind in ("controller", "broker", "gateway"):
            refusal = decide(Principal(kind, "1"), path)
            assert refusal is not None and "role's rights" in refusal.message, (kind, path)


def test_no_identity_is_unauthenticated_and_told_what_to_pass():
    refusal = decide(None, "/replog.v1.LogService/Produce")
    assert refusal.code == UNAUTHENTICATED
    assert "--tls-cert-file" in refusal.message


def test_a_broker_speaks_only_for_itself():
    broker_2 = Principal("broker", "2")
    assert decide_speaks_for(broker_2, "/replog.v1.ControllerService/LogDirsOffline", 2) is None
    refusal = decide_speaks_for(broker_2, "/replog.v1.ControllerService/LogDirsOffline", 1)
    assert refusal.code == PERMISSION_DENIED and "for broker 1" in refusal.message


# --- through the interceptor, around the broker's LogService ---------------------------------------------


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


class Broker:
    """The LogService handlers behind the authorization interceptor; alice may produce to `mine`."""

    def __init__(self, metadata: MetadataCache | None = None, hosted=()) -> None:
        self.produced = FakeProduce()
        servicer = LogServicer(
            broker_id=1, produce=self.produced, lookup=lambda tp: None, hosted=lambda: list(hosted),
            metadata=metadata or MetadataCache(), producer_ids=None, clock=SystemClock(), metrics=None,
            fetch_bytes_max=1 << 20, stopping=lambda: False, wait_slots=WaitSlots(32),
            quotas=QuotaGate(ClientQuotas(SystemClock(), BrokerMetrics(CollectorRegistry()), samples=11,
                                          sample_ms=1000)))
        self.handlers = handlers_of(log_pb2_grpc.add_LogServiceServicer_to_server, servicer)
        authorizer = Authorizer(("User:admin",), [AclBinding("User:alice", "topic", "literal", "mine", "produce",
                                                             "allow")])
        self.interceptors = [AuthorizationInterceptor(Enforcer(authorizer))]

    def call(self, name: str, request, uri: str | None = ALICE):
        path = f"/replog.v1.LogService/{name}"
        return invoke(self.interceptors, path, self.handlers[path], request, FakeContext(uri))


def produce(*topics: str) -> log_pb2.ProduceRequest:
    return log_pb2.ProduceRequest(acks=1, partitions=[log_pb2.ProducePartitionData(topic=t) for t in topics])


def test_a_refused_produce_appends_nothing_and_names_who_what_and_where():
    broker = Broker()
    with pytest.raises(Aborted) as refused:
        broker.call("Produce", produce("mine", "theirs"))
    assert broker.produced.appended == []
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert all(word in refused.value.message for word in ("User:alice", "produce", "'theirs'"))
    broker.call("Produce", produce("mine"))
    assert broker.produced.appended == ["mine"]


def test_a_produce_stream_answers_what_came_before_its_first_refused_request():
    broker = Broker()
    requests = [log_pb2.ProduceStreamRequest(request_id=i, produce=produce(topic))
                for i, topic in enumerate(["mine", "mine", "theirs", "mine"])]
    answers = []
    behaviour = _stream_behaviour(broker, "ProduceStream")
    with pytest.raises(Aborted) as refused:
        for answer in behaviour(iter(requests), FakeContext(ALICE)):
            answers.append(answer.request_id)
    assert sorted(answers) == [0, 1]
    assert broker.produced.appended == ["mine", "mine"]
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED and "'theirs'" in refused.value.message


def _stream_behaviour(broker: Broker, name: str):
    from tests.unit.common.edge_fakes import behaviour_of, wrapped
    path = f"/replog.v1.LogService/{name}"
    return behaviour_of(wrapped(broker.interceptors, path, broker.handlers[path]))


def test_a_user_that_may_produce_nowhere_cannot_open_a_produce_stream_and_takes_no_slot():
    broker = Broker()
    opened = []

    def requests():
        opened.append(True)
        yield log_pb2.ProduceStreamRequest(produce=produce("mine"))

    with pytest.raises(Aborted) as refused:
        list(_stream_behaviour(broker, "ProduceStream")(requests(), FakeContext("replog://user/probe")))
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED and "any topic" in refused.value.message
    assert opened == [], "refused before the stream's first request was read"


def test_fetch_needs_consume_and_init_producer_id_needs_produce_somewhere():
    broker = Broker()
    with pytest.raises(Aborted) as refused:
        broker.call("Fetch", log_pb2.FetchRequest(partitions=[log_pb2.FetchPartition(topic="mine")]))
    assert "consume" in refused.value.message
    with pytest.raises(Aborted) as refused:
        broker.call("InitProducerId", log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                    uri="replog://user/bob")
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED and "User:bob" in refused.value.message
    bumped = broker.call("InitProducerId", log_pb2.InitProducerIdRequest(producer_id=5, producer_epoch=0))
    assert (bumped.producer_id, bumped.producer_epoch) == (5, 1)


@pytest.mark.parametrize("uri", ["replog://broker/2", "replog://controller/1", "replog://gateway/1"])
def test_a_service_certificate_may_not_produce_at_all(uri):
    broker = Broker()
    with pytest.raises(Aborted) as refused:
        broker.call("Produce", produce("mine"), uri=uri)
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert broker.produced.appended == []


def test_metadata_of_every_topic_shows_the_describable_ones_and_a_named_one_needs_describe():
    cache = MetadataCache()
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=1, full=True, partitions=[
        broker_control_pb2.PartitionState(topic=t, partition=0, leader=1, leader_epoch=1, isr=[1], replicas=[1])
        for t in ("mine", "theirs")]))
    broker = Broker(cache)
    assert [t.name for t in broker.call("Metadata", log_pb2.MetadataRequest()).topics] == ["mine"]
    with pytest.raises(Aborted) as refused:
        broker.call("Metadata", log_pb2.MetadataRequest(topics=["theirs"]))
    assert "describe" in refused.value.message and "'theirs'" in refused.value.message
    every = broker.call("Metadata", log_pb2.MetadataRequest(), uri="replog://user/admin")
    assert [t.name for t in every.topics] == ["mine", "theirs"]
    assert broker.call("Metadata", log_pb2.MetadataRequest(), uri="replog://user/probe").topics == []


def test_a_call_without_identity_is_unauthenticated():
    with pytest.raises(Aborted) as refused:
        Broker().call("Metadata", log_pb2.MetadataRequest(), uri=None)
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
