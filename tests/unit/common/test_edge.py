"""The edge every server runs after authorization: request bounds, limits per identity, idle streams."""

from __future__ import annotations

import threading

import grpc
import pytest
from google.protobuf import message_factory
from hypothesis import given
from hypothesis import strategies as st

from replog.common.edge.admission import CALL, WATCH, Admission, Limits, limits_for_threads
from replog.common.edge.guard import EdgeGuard
from replog.common.edge.idle_streams import IdleStreams
from replog.common.edge.validation import EXPLICIT, LIST_ITEMS_MAX, REPEATED_ITEMS_MAX, STRING_CHARS_MAX, RequestChecker
from replog.common.refusal_log import RefusalLog
from replog.v1 import admin_pb2, broker_control_pb2, common_pb2, group_pb2, log_pb2
from tests.unit.common.edge_fakes import Aborted, FakeContext, behaviour_of, wrapped

# --- validation ----------------------------------------------------------------------------------


def test_every_explicit_bound_names_a_real_field():
    from tests.unit.common.test_method_rules import _services

    fields = set()
    for service in _services():
        for method in service.methods:
            stack = [method.input_type]
            while stack:
                descriptor = stack.pop()
                for field in descriptor.fields:
                    if field.full_name not in fields:
                        fields.add(field.full_name)
                        if field.message_type is not None:
                            stack.append(field.message_type)
    assert not set(EXPLICIT) - fields


@pytest.mark.parametrize("request_, fragment", [
    (broker_control_pb2.LeaderAndIsrRequest(partitions=[broker_control_pb2.PartitionState(topic="ok"),
                                                        broker_control_pb2.PartitionState(topic="../../x")]),
     "LeaderAndIsrRequest.partitions[1].topic: Topic name '../../x' is illegal"),
    (log_pb2.ProduceRequest(partitions=[log_pb2.ProducePartitionData(topic="t" * 256)]), "256 characters long"),
    (log_pb2.MetadataRequest(topics=["ok", ""]), "MetadataRequest.topics[1]: Topic name is illegal"),
    (broker_control_pb2.UpdateMetadataRequest(deleted_topics=[".."]), "cannot be '.' or '..'"),
    (admin_pb2.DeleteTopicRequest(name="a b"), "DeleteTopicRequest.name"),
    (group_pb2.JoinGroupRequest(group_id="g", client_id="c" * (STRING_CHARS_MAX + 1)),
     f"JoinGroupRequest.client_id: {STRING_CHARS_MAX + 1} characters"),
    (admin_pb2.CreateTopicRequest(name="x", configs={"retention.ms": "9" * 70_000}),
     "CreateTopicRequest.configs['retention.ms']: 70000 characters"),
    (broker_control_pb2.LeaderAndIsrRequest(leaders=[common_pb2.BrokerEndpoint(host="h")] * (
        REPEATED_ITEMS_MAX + 1)), "LeaderAndIsrRequest.leaders: 10001 items"),
    (group_pb2.SyncGroupRequest(group_id="g", assignments=[group_pb2.MemberAssignment(
        member_id="m", partitions=[common_pb2.TopicPartition(topic="a/b")])]),
     "SyncGroupRequest.assignments[0].partitions[0].topic"),
    # An enum value the proto does not define reached the gateway's table lookup (KeyError, UNKNOWN).
    (admin_pb2.DescribeTopicsRequest(filter=2147483647), "DescribeTopicsRequest.filter: 2147483647 is no value of"),
    (log_pb2.ProduceRequest(partitions=[log_pb2.ProducePartitionData(topic="t", records=[common_pb2.Record(
        timestamp_type=-1)])]), "ProduceRequest.partitions[0].records[0].timestamp_type: -1 is no value"),
])
def test_a_request_out_of_bounds_is_named_by_its_path_and_rule(request_, fragment):
    problem = RequestChecker().problem(request_)
    assert problem is not None and fragment in problem, problem


@pytest.mark.parametrize("request_", [
    admin_pb2.CreateTopicRequest(name="orders", assignment=[admin_pb2.ReplicaAssignment(topic="", replicas=[1])]),
    admin_pb2.CreateTopicRequest(name="orders", configs={"retention.ms": "9" * 60_000}),
    log_pb2.ProduceRequest(partitions=[log_pb2.ProducePartitionData(topic="__consumer_offsets",
                                                                    record_batch=b"x" * 10)]),
    broker_control_pb2.LeaderAndIsrRequest(partitions=[broker_control_pb2.PartitionState(topic="t" * 249)]),
    log_pb2.MetadataRequest(topics=[f"topic-{i}" for i in range(REPEATED_ITEMS_MAX + 5)]),
])
def test_requests_within_bounds_pass(request_):
    assert RequestChecker().problem(request_) is None


def test_a_list_of_partitions_takes_more_items_than_other_lists():
    checker = RequestChecker()
    many = log_pb2.FetchRequest(partitions=[log_pb2.FetchPartition(topic="t", partition=i)
                                            for i in range(REPEATED_ITEMS_MAX + 1)])
    assert checker.problem(many) is None
    assert LIST_ITEMS_MAX > REPEATED_ITEMS_MAX


@given(st.text(max_size=300))
def test_the_checker_never_raises_and_accepts_only_legal_topic_names(name):
    from replog.common.core.names import topic_name_problem

    problem = RequestChecker().problem(log_pb2.FetchRequest(partitions=[log_pb2.FetchPartition(topic=name)]))
    assert (problem is None) == (topic_name_problem(name) is None)


def test_every_request_type_of_every_method_can_be_checked():
    from tests.unit.common.test_method_rules import _services

    checker = RequestChecker()
    for service in _services():
        for method in service.methods:
            found = checker.problem(message_factory.GetMessageClass(method.input_type)())
            assert found is None or "Topic name is illegal, it can't be empty" in found, (method.full_name, found)


# --- admission -----------------------------------------------------------------------------------


def test_a_principal_gets_a_quarter_of_the_threads_and_users_three_quarters():
    limits = limits_for_threads(128)
    assert (limits.principal_calls_max, limits.users_calls_max) == (32, 96)
    assert limits_for_threads(32).principal_calls_max == 8
    assert limits_for_threads(128, principal_calls_max=5).principal_calls_max == 5


def test_one_identity_is_held_to_its_share_and_others_still_get_theirs():
    admission = Admission(Limits(principal_calls_max=2, users_calls_max=3, principal_watches_max=1))
    assert admission.enter("User:probe", CALL, counts_as_user=True) is None
    assert admission.enter("User:probe", CALL, counts_as_user=True) is None
    refused = admission.enter("User:probe", CALL, counts_as_user=True)
    assert "User:probe already holds 2" in refused
    assert admission.enter("User:alice", CALL, counts_as_user=True) is None
    assert "users hold 3" in admission.enter("User:bob", CALL, counts_as_user=True)
    # super users and services are not counted among the users
    assert admission.enter("User:admin", CALL, counts_as_user=False) is None
    assert admission.enter("broker:2", CALL, counts_as_user=False) is None
    assert admission.enter("User:probe", WATCH, counts_as_user=True) is None
    assert "health watches" in admission.enter("User:probe", WATCH, counts_as_user=True)
    admission.leave("User:probe", CALL, counts_as_user=True)
    assert admission.enter("User:bob", CALL, counts_as_user=True) is None


def test_the_table_holds_only_principals_that_hold_something():
    admission = Admission(limits_for_threads(32))
    for i in range(100):
        assert admission.enter(f"User:u{i}", CALL, counts_as_user=True) is None
        admission.leave(f"User:u{i}", CALL, counts_as_user=True)
    assert admission.principals == 0


# --- idle streams --------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_a_stream_waiting_for_its_caller_past_the_bound_is_cancelled_and_a_busy_one_is_not():
    clock = Clock()
    idle = IdleStreams(5000, monotonic_s=clock)
    silent, busy = FakeContext("replog://user/a"), FakeContext("replog://user/b")
    arrived = threading.Event()

    def never():
        arrived.wait()
        return
        yield

    silent_requests = idle.watched(never(), silent, "/x/Silent")
    busy_requests = idle.watched(iter([1, 2]), busy, "/x/Busy")
    assert next(busy_requests) == 1  # the handler now works on it: not the caller's time
    reader = threading.Thread(target=lambda: list(silent_requests))
    reader.start()
    try:
        from tests.integration.controller_helpers import wait_for
        wait_for(lambda: idle.open == 2, 5, "both streams watched")
        clock.now_s += 4.9
        assert idle.end_idle() == 0
        clock.now_s += 0.2
        wait_for(lambda: idle.end_idle() == 1 or silent.cancelled, 5, "the silent stream to be ended")
        assert silent.cancelled and not busy.cancelled
    finally:
        arrived.set()
        reader.join(5)
    idle.stop()


# --- the guard around a handler ---------------------------------------------------------------------


def _guard(threads: int = 8) -> EdgeGuard:
    import logging
    return EdgeGuard(checker=RequestChecker(), idle=IdleStreams(60_000),
                     refusals=RefusalLog(logging.getLogger("test"), lambda: 0.0),
                     admission=Admission(limits_for_threads(threads)), super_users=frozenset({"User:admin"}))


def test_a_bad_request_is_invalid_argument_before_the_handler_runs():
    ran = []
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: ran.append(request) or "ok")
    behaviour = behaviour_of(wrapped([_guard()], "/replog.v1.LogService/Metadata", handler))
    with pytest.raises(Aborted) as refused:
        behaviour(log_pb2.MetadataRequest(topics=["../x"]), FakeContext("replog://user/alice"))
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT and ran == []
    assert behaviour(log_pb2.MetadataRequest(topics=["x"]), FakeContext("replog://user/alice")) == "ok"


def test_streams_held_by_one_user_are_counted_until_their_calls_end():
    guard = _guard(threads=8)  # two calls per identity
    handler = grpc.stream_stream_rpc_method_handler(lambda requests, context: iter(["opened", "ended"]))
    behaviour = behaviour_of(wrapped([guard], "/replog.v1.LogService/ProduceStream", handler))
    contexts = [FakeContext("replog://user/probe") for _ in range(3)]
    answers = [behaviour(iter([]), context) for context in contexts]
    assert next(answers[0]) == next(answers[1]) == "opened"  # both held open
    with pytest.raises(Aborted) as refused:
        next(answers[2])
    assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert next(behaviour(iter([]), FakeContext("replog://user/admin"))) == "opened"  # another identity
    contexts[0].end()  # the first stream's call ended (its peer went away): its share is given back
    assert next(behaviour(iter([]), FakeContext("replog://user/probe"))) == "opened"
