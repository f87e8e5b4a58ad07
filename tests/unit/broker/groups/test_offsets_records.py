"""The offsets partition's records: encoding, the table they fold into, placement, and restoring a group."""

import pytest

from replog.broker.core.errors import ErrorCode
from replog.broker.groups.core.group import Group
from replog.broker.groups.core.model import CommittedOffset, GroupPolicy, GroupState, JoinRequest, Protocol
from replog.broker.groups.core.offsets import OffsetTable
from replog.broker.groups.core.placement import group_id_problem, offsets_partition
from replog.broker.groups.core.records import (
    GroupRecord,
    OffsetRecord,
    RecordFormatError,
    decode,
    group_key,
    group_value,
    offset_key,
    offset_value,
)
from replog.common.core.partitions import TopicPartition

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def stable_group() -> Group:
    group = Group("billing", GroupPolicy(initial_rebalance_delay_ms=3_000))
    for name in ("a", "b"):
        group.join(JoinRequest("", "app", "h", 10_000, 30_000, "consumer",
                               (Protocol("range", ("orders",), (TP0,), b"\x01"),)), name, 0)
    group.tick(3_000)
    group.sync(group.leader_member_id, 1, {"a": ((TP0,), b"x"), "b": ((TP1,), b"")}, 3_000)
    group.assignment_persisted(1, None, 3_000)
    assert group.state is GroupState.STABLE
    return group


def test_offset_records_round_trip_and_an_empty_value_is_a_tombstone():
    committed = CommittedOffset(42, 3, "processed up to 41", 1_700_000_000_000)
    assert decode(offset_key("billing", TP1), offset_value(committed)) == OffsetRecord("billing", TP1, committed)
    assert decode(offset_key("billing", TP1), b"") == OffsetRecord("billing", TP1, None)
    assert offset_key("billing", TP1) == offset_key("billing", TopicPartition("orders", 1))  # same fact, same key


def test_a_restored_group_keeps_its_generation_so_stale_members_stay_fenced_after_a_coordinator_move():
    snapshot = stable_group().snapshot()
    record = decode(group_key("billing"), group_value(snapshot))
    assert record == GroupRecord("billing", snapshot)
    moved = Group.restore(record.snapshot, GroupPolicy(), now_ms=50_000)
    assert moved.state is GroupState.STABLE and moved.generation_id == 1
    assert moved.members["a"].assignment == (TP0,) and moved.members["a"].assignment_user_data == b"x"
    assert moved.commit_refusal("a", 0, 50_001).code is ErrorCode.ILLEGAL_GENERATION
    assert moved.commit_refusal("a", 1, 50_001) is None
    assert moved.heartbeat("b", 1, 50_002) is None
    # the members get a full session from the move before they are expired
    assert moved.tick(59_000).answers == [] and set(moved.members) == {"a", "b"}


@pytest.mark.parametrize("key, value", [
    (b"not json", b""),
    (b'{"v":9,"kind":"offset"}', b""),
    (b'{"v":1,"kind":"weird","group":"g"}', b""),
    (offset_key("g", TP0), b'{"offset":"x"}'),
])
def test_unreadable_records_raise_a_format_error(key, value):
    with pytest.raises(RecordFormatError):
        decode(key, value)


def test_the_table_is_the_latest_value_per_key_in_log_order():
    table = OffsetTable()
    records = [("g", TP0, CommittedOffset(5, 0, "", 1)), ("g", TP0, CommittedOffset(9, 1, "", 2)),
               ("g", TP1, CommittedOffset(3, 0, "", 3)), ("h", TP0, CommittedOffset(1, 0, "", 4)),
               ("g", TP1, None)]
    for group_id, tp, committed in records:
        table.put(group_id, tp, committed)
    assert table.of_group("g") == {TP0: CommittedOffset(9, 1, "", 2)}
    assert table.groups() == ["g", "h"]
    assert table.drop_topic("orders") == [("g", TP0), ("h", TP0)] and table.groups() == []


def test_a_group_always_maps_to_the_same_offsets_partition():
    assert offsets_partition("billing", 50) == 26  # CRC-32, the same in every process and version
    spread = {offsets_partition(f"group-{i}", 50) for i in range(500)}
    assert len(spread) == 50


@pytest.mark.parametrize("group_id, words", [("", "empty"), ("a b", "may only hold"), ("x" * 250, "longer"),
                                             ("..", "cannot be")])
def test_bad_group_ids_are_named(group_id, words):
    assert words in group_id_problem(group_id)
