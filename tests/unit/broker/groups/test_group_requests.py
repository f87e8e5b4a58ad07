"""GroupService requests are checked field by field before the coordinator sees them."""

import pytest

from replog.broker.groups import requests as checks
from replog.v1 import common_pb2, group_pb2


def join(**fields):
    base = dict(group_id="g", session_timeout_ms=6000, protocol_type="consumer",
                protocols=[group_pb2.GroupProtocol(name="range", topics=["orders"])])
    return group_pb2.JoinGroupRequest(**{**base, **fields})


def test_a_good_join_becomes_a_domain_request_with_the_rebalance_timeout_defaulted():
    request = checks.join_request(join(), "ipv4:10.0.0.1:5000")
    assert request.rebalance_timeout_ms == 6000 and request.protocols[0].topics == ("orders",)


@pytest.mark.parametrize("fields, words", [
    ({"protocols": []}, "give 1 to 8"),
    ({"protocols": [group_pb2.GroupProtocol(name="range")] * 2}, "twice"),
    ({"protocols": [group_pb2.GroupProtocol(name="")]}, "protocols.name is empty"),
    ({"protocols": [group_pb2.GroupProtocol(name="r", user_data=b"x" * 70_000)]}, "user_data"),
    ({"session_timeout_ms": 0}, "must be positive"),
    ({"rebalance_timeout_ms": 700_000}, "rebalance_timeout_ms"),
    ({"protocol_type": ""}, "protocol_type is empty"),
    ({"member_id": "m" * 300}, "longer than"),
])
def test_bad_joins_name_the_field(fields, words):
    with pytest.raises(checks.BadRequest, match=words):
        checks.join_request(join(**fields), "")


def test_an_assignment_giving_a_partition_twice_is_refused():
    tp = common_pb2.TopicPartition(topic="orders", partition=0)
    request = group_pb2.SyncGroupRequest(group_id="g", generation_id=1, member_id="a", assignments=[
        group_pb2.MemberAssignment(member_id="a", partitions=[tp]),
        group_pb2.MemberAssignment(member_id="b", partitions=[tp])])
    with pytest.raises(checks.BadRequest, match="two members"):
        checks.sync_assignments(request)


@pytest.mark.parametrize("partition, words", [
    (group_pb2.OffsetCommitPartition(topic="orders", partition=0, offset=-1), "offset -1"),
    (group_pb2.OffsetCommitPartition(topic="orders", partition=-2, offset=1), "partitions start at 0"),
    (group_pb2.OffsetCommitPartition(topic="orders", partition=0, offset=1, leader_epoch=-3), "leader_epoch"),
    (group_pb2.OffsetCommitPartition(topic="", partition=0, offset=1), "not a topic name"),
    (group_pb2.OffsetCommitPartition(topic="orders", partition=0, offset=1, metadata="x" * 5000), "metadata"),
])
def test_bad_commits_name_the_field(partition, words):
    with pytest.raises(checks.BadRequest, match=words):
        checks.commit_offsets([partition], 0)


@pytest.mark.parametrize("member_id, generation_id", [("", 3), ("m", -1), ("m", -7)])
def test_a_commit_names_a_member_and_generation_or_neither(member_id, generation_id):
    with pytest.raises(checks.BadRequest):
        checks.commit_member(member_id, generation_id)
    checks.commit_member("", -1)
    checks.commit_member("m", 0)
