"""DeleteRecords on the gateway (pure): every partition routed to its live leader, or the request refused."""

from __future__ import annotations

import pytest

from replog.common.topic_admin.core.refusal import Refusal, Status
from replog.gateway.core.config_entries import config_entries
from replog.gateway.core.records import Deletion, check_high_watermarks, route_deletions


@pytest.fixture
def view(make_view):
    return make_view(brokers=(1, 2), topics={
        "orders": {"partitions": {0: (1, 2), 1: (2, 3)}, "states": {0: (1, (1, 2)), 1: (3, (3,))}}})


def refusal(call) -> Refusal:
    with pytest.raises(Refusal) as raised:
        call()
    return raised.value


def test_each_deletion_goes_to_its_live_leader_in_request_order(view):
    routed = route_deletions(view, [Deletion("orders", 0, 5)])
    assert [(r.deletion.offset, r.leader_id) for r in routed] == [(5, 1)]


@pytest.mark.parametrize("deletions, status, words", [
    ([], Status.INVALID_ARGUMENT, "at least one"),
    ([Deletion("orders", 0, -2)], Status.INVALID_ARGUMENT, "negative"),
    ([Deletion("orders", 0, 1), Deletion("orders", 0, 2)], Status.INVALID_ARGUMENT, "named twice"),
    ([Deletion("nowhere", 0, 1)], Status.NOT_FOUND, "'nowhere' does not exist"),
    ([Deletion("orders", 9, 1)], Status.NOT_FOUND, "no partition 9"),
    ([Deletion("orders", 1, 1)], Status.FAILED_PRECONDITION, "no live leader"),  # broker 3 is down
])
def test_a_bad_request_is_refused_as_a_whole(view, deletions, status, words):
    refused = refusal(lambda: route_deletions(view, deletions))
    assert refused.status is status and words in refused.message


def test_an_offset_above_the_high_watermark_is_refused_naming_it(view):
    routed = route_deletions(view, [Deletion("orders", 0, 50)])
    refused = refusal(lambda: check_high_watermarks(routed, {("orders", 0): 40}))
    assert refused.status is Status.FAILED_PRECONDITION and "high watermark 40" in refused.message
    check_high_watermarks(route_deletions(view, [Deletion("orders", 0, -1)]), {("orders", 0): 40})
    check_high_watermarks(routed, {})  # unknown: the leader checks it itself


def test_config_entries_name_their_source():
    entries = {key: (value, source) for key, value, source in
               config_entries({"retention.ms": "1000"}, {"retention.ms": "5", "segment.bytes": "4096"})}
    assert entries["retention.ms"] == ("1000", "topic_override")
    assert entries["segment.bytes"] == ("4096", "broker_default")
    assert entries["unclean.leader.election.enable"] == ("false", "default")
    unanswered = {key: source for key, _, source in config_entries({}, None)}
    assert unanswered["segment.bytes"] == "default" and "flush.messages" not in unanswered
