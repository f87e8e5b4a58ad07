"""The fuzz's requests: one per seed, the same every time, of every method, within the size bound, and
hostile where it means to be."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.enforcement import Enforcer
from replog.common.edge.validation import STRING_CHARS_MAX, RequestChecker
from replog.common.security.rules import RULES
from replog.v1 import broker_control_pb2, log_pb2

from .messages import ESCAPE_MARK, MESSAGE_BYTES_MAX, Context, build, plausible_message, random_scalar, seed_of
from .targets import all_targets, defang

SERVERS = ["controller-1", "broker-1", "broker-2", "gateway-1", "zookeeper"]


def test_every_method_of_every_service_is_a_target_served_by_its_processes():
    targets = {t.path: t for t in all_targets(SERVERS)}
    assert len(targets) >= 50
    assert targets["/replog.v1.LogService/Produce"].servers == ("broker-1", "broker-2")
    assert targets["/replog.v1.AdminService/CreateTopic"].servers == ("gateway-1",)
    assert targets["/replog.v1.ControllerService/AlterPartition"].servers == ("controller-1",)
    assert targets["/grpc.health.v1.Health/Check"].servers == ("controller-1", "broker-1", "broker-2", "gateway-1")


def test_a_seed_rebuilds_its_message_and_every_message_fits_the_bound():
    for target in all_targets(SERVERS):
        for index in range(12):
            seed = seed_of(55, 0, "probe", target.path, index)
            kind, message = build(target.method.input_type, seed, Context())
            again = build(target.method.input_type, seed, Context())
            assert (kind, message) == again, target.path
            assert message.ByteSize() <= MESSAGE_BYTES_MAX


def test_random_values_carry_paths_extremes_and_unknown_enums():
    rng = random.Random(55)
    fields = log_pb2.ListOffsetsPartition.DESCRIPTOR.fields_by_name
    strings = [random_scalar(fields["topic"], rng) for _ in range(300)]
    assert any(ESCAPE_MARK in s for s in strings) and "" in strings and max(map(len, strings)) > STRING_CHARS_MAX
    numbers = {random_scalar(fields["timestamp_ms"], rng) for _ in range(300)}
    assert {(1 << 63) - 1, -(1 << 63), -1} <= numbers
    specs = {random_scalar(fields["spec"], rng) for _ in range(300)}
    assert specs - {v.number for v in fields["spec"].enum_type.values}, "values the proto does not define"


def test_a_plausible_request_names_the_playground_and_the_live_epochs():
    context = Context(controller_epoch=7, broker_epochs={1: 40, 2: 41}, leader_epoch=3)
    request = plausible_message(broker_control_pb2.LeaderAndIsrRequest.DESCRIPTOR, random.Random(1), context)
    assert request.controller_epoch == 7 and request.broker_epoch == 40
    assert [(p.topic, p.leader_epoch) for p in request.partitions] == [("fuzz-play", 3)]


def test_the_controllers_word_on_every_broker_is_not_spoken_at_the_live_epoch():
    target = next(t for t in all_targets(SERVERS) if t.path.endswith("/UpdateMetadata"))
    request = defang(target, broker_control_pb2.UpdateMetadataRequest(controller_epoch=7, full=True), Context(
        controller_epoch=7))
    assert request.controller_epoch == 8


TARGETS = all_targets(SERVERS)


@settings(max_examples=300)
@given(st.sampled_from(TARGETS), st.integers(0, (1 << 64) - 1))
def test_the_edge_and_the_acl_checks_judge_any_fuzzed_request_without_raising(target, seed):
    """What runs on every request before its servicer (the bounds, a user's ACL needs) answers a verdict
    for any request the fuzz can send: an exception there would be UNKNOWN on every server."""
    _, message = build(target.method.input_type, seed, Context())
    RequestChecker().problem(message)
    rule = RULES[target.path]
    if rule.user is not None:
        rule.user.refusal(Enforcer(Authorizer()), "User:probe", message)
