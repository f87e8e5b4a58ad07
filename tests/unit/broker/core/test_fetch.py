"""Consumer fetch bounds (up to the HW) and long-poll completion."""

import pytest

from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fetch.fetch import ConsumerRead, DelayedFetch, FetchProbe, long_poll_ready, plan_consumer_fetch
from replog.broker.core.produce.purgatory import AddOutcome, Purgatory


def plan(fetch_offset, *, is_leader=True, current_leader_epoch=-1):
    return plan_consumer_fetch(
        is_leader=is_leader, leader_epoch=5, current_leader_epoch=current_leader_epoch,
        fetch_offset=fetch_offset, log_start_offset=10, log_end_offset=30, high_watermark=20,
    )


def test_reads_stop_at_the_hw():
    assert plan(12) == ConsumerRead(fetch_offset=12, read_upto_offset=20, high_watermark=20, log_start_offset=10)


@pytest.mark.parametrize("fetch_offset", [20, 25, 30])
def test_between_hw_and_leo_is_empty_not_an_error(fetch_offset):
    read = plan(fetch_offset)
    assert isinstance(read, ConsumerRead) and read.is_empty


@pytest.mark.parametrize(
    "kwargs, code",
    [
        ({"fetch_offset": 9}, ErrorCode.OFFSET_OUT_OF_RANGE),
        ({"fetch_offset": 31}, ErrorCode.OFFSET_OUT_OF_RANGE),
        ({"fetch_offset": 12, "is_leader": False}, ErrorCode.NOT_LEADER),
        ({"fetch_offset": 12, "current_leader_epoch": 4}, ErrorCode.FENCED_LEADER_EPOCH),
        ({"fetch_offset": 12, "current_leader_epoch": 6}, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ],
)
def test_refused_fetches(kwargs, code):
    result = plan(**kwargs)
    assert isinstance(result, Refusal) and result.code is code


def test_matching_epoch_passes():
    assert isinstance(plan(12, current_leader_epoch=5), ConsumerRead)


def test_long_poll_rule():
    assert not long_poll_ready(available_bytes=10, min_bytes=100, now_ms=5, deadline_ms=10)
    assert long_poll_ready(available_bytes=100, min_bytes=100, now_ms=5, deadline_ms=10)
    assert long_poll_ready(available_bytes=0, min_bytes=100, now_ms=10, deadline_ms=10)


def test_delayed_fetch_completes_on_bytes_or_change_and_expires_otherwise():
    probe = {"value": FetchProbe(available_bytes=0, partition_changed=False)}
    purgatory = Purgatory(operations_max=4)
    fetch = DelayedFetch(min_bytes=100, probe=lambda: probe["value"])
    assert purgatory.add(fetch, ["orders-0"], deadline_ms=500) is AddOutcome.WATCHING
    probe["value"] = FetchProbe(available_bytes=150, partition_changed=False)
    assert purgatory.check("orders-0") == [fetch] and fetch.completed and not fetch.expired

    moved = DelayedFetch(min_bytes=100, probe=lambda: probe["value"])
    probe["value"] = FetchProbe(available_bytes=0, partition_changed=False)
    purgatory.add(moved, ["orders-0"], deadline_ms=500)
    probe["value"] = FetchProbe(available_bytes=0, partition_changed=True)
    assert purgatory.check("orders-0") == [moved]

    idle = DelayedFetch(min_bytes=100, probe=lambda: FetchProbe(0, False))
    purgatory.add(idle, ["orders-0"], deadline_ms=500)
    assert purgatory.expire(now_ms=500) == [idle] and idle.expired
