"""The records source's planning: options to offsets, offsets to ranges, ranges to pieces (records/offsets.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.spark.records import offsets as ofs

BOUNDS = {("t", 0): ofs.Bounds(0, 100), ("t", 1): ofs.Bounds(10, 20), ("u", 0): ofs.Bounds(0, 0)}


def test_earliest_and_latest_are_log_start_and_high_watermark():
    assert ofs.resolve("earliest", BOUNDS, ofs.EARLIEST, "startingOffsets") == {("t", 0): 0, ("t", 1): 10, ("u", 0): 0}
    assert ofs.resolve("latest", BOUNDS, ofs.LATEST, "endingOffsets") == {("t", 0): 100, ("t", 1): 20, ("u", 0): 0}


def test_the_json_form_names_partitions_and_the_rest_take_the_default():
    spec = ofs.parse_spec('{"t": {"0": 42, "1": -2}}', ofs.EARLIEST, "startingOffsets")
    assert ofs.resolve(spec, BOUNDS, ofs.LATEST, "startingOffsets") == {("t", 0): 42, ("t", 1): 10, ("u", 0): 0}
    ending = ofs.parse_spec('{"t": {"1": -1}}', ofs.LATEST, "endingOffsets")
    assert ofs.resolve(ending, BOUNDS, ofs.EARLIEST, "endingOffsets")[("t", 1)] == 20


@pytest.mark.parametrize("text", ["yesterday", "[1]", '{"t": 3}', '{"t": {"x": 1}}', '{"t": {"0": -3}}',
                                  '{"t": {"0": true}}'])
def test_malformed_offsets_name_their_option(text):
    with pytest.raises(ofs.OffsetsError, match="startingOffsets"):
        ofs.parse_spec(text, ofs.EARLIEST, "startingOffsets")


def test_unknown_partitions_and_ends_past_the_high_watermark_are_refused():
    with pytest.raises(ofs.OffsetsError, match="t partition 7 is not read"):
        ofs.resolve({"t": {"7": 1}}, BOUNDS, ofs.EARLIEST, "startingOffsets")
    with pytest.raises(ofs.OffsetsError, match="past its high watermark 100"):
        ofs.ranges({k: 0 for k in BOUNDS}, {("t", 0): 101, ("t", 1): 20, ("u", 0): 0}, BOUNDS)
    with pytest.raises(ofs.OffsetsError, match="after the ending offset"):
        ofs.ranges({("t", 0): 50, ("t", 1): 10, ("u", 0): 0}, {("t", 0): 40, ("t", 1): 20, ("u", 0): 0}, BOUNDS)


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5000)), min_size=1, max_size=6),
       st.integers(1, 700))
def test_pieces_cover_every_range_exactly_once(spans, piece_max):
    ranges = [ofs.OffsetRange("t", i, start, start + length) for i, (start, length) in enumerate(spans)]
    pieces = ofs.split(ranges, piece_max)
    assert all(0 < p.count <= piece_max for p in pieces)
    for r in ranges:
        covered = [o for p in pieces if p.partition == r.partition for o in range(p.start, p.end)]
        assert covered == list(range(r.start, r.end))


def test_a_capped_micro_batch_shares_the_limit_and_never_moves_back():
    starts = {("t", 0): 0, ("t", 1): 50, ("t", 2): 30}
    latest = {("t", 0): 1000, ("t", 1): 60, ("t", 2): 20}
    assert ofs.capped(starts, latest, 300) == {("t", 0): 100, ("t", 1): 60, ("t", 2): 30}
    assert ofs.capped(starts, latest, None) == {("t", 0): 1000, ("t", 1): 60, ("t", 2): 30}


def test_the_json_form_round_trips():
    positions = {("t", 0): 5, ("t", 11): 7, ("u", 2): 0}
    assert ofs.to_json_form(positions) == {"t": {"0": 5, "11": 7}, "u": {"2": 0}}
    assert ofs.from_json_form(ofs.to_json_form(positions)) == positions


def test_timestamp_options_parse_and_name_their_partitions():
    bounds = {("t", 0): ofs.Bounds(0, 10), ("t", 1): ofs.Bounds(2, 8)}
    assert ofs.parse_timestamps(None, None, "starting") is None
    assert ofs.timestamp_targets(ofs.parse_timestamps("1700000000000", None, "starting"), bounds, "x") == {
        ("t", 0): 1_700_000_000_000, ("t", 1): 1_700_000_000_000}
    by_partition = ofs.parse_timestamps("5", '{"t": {"1": 42}}', "starting")  # the JSON wins
    assert ofs.timestamp_targets(by_partition, bounds, "x") == {("t", 1): 42}
    for single, by in (("yesterday", None), ("-5", None), (None, '{"t": {"0": -3}}'), (None, "[1]")):
        with pytest.raises(ofs.OffsetsError, match="starting"):
            ofs.parse_timestamps(single, by, "starting")
    with pytest.raises(ofs.OffsetsError, match="not read"):
        ofs.timestamp_targets({"other": {"0": 1}}, bounds, "startingOffsetsByTimestamp")


def test_a_time_past_every_record_is_the_high_watermark_and_offsets_stay_in_the_log():
    bounds = {("t", 0): ofs.Bounds(0, 10), ("t", 1): ofs.Bounds(2, 8)}
    assert ofs.at_times({("t", 0): None, ("t", 1): 0}, bounds) == {("t", 0): 10, ("t", 1): 2}
    assert ofs.at_times({("t", 0): 12}, bounds) == {("t", 0): 10}
