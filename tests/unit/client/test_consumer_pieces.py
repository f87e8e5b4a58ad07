"""Small pure parts of the client (issue 59): bootstrap strings, where a new leader's log diverges from a
fetch position (KIP-320), the positions map that still takes a bare partition number, and the position
past a compacted log's empty batch."""

from __future__ import annotations

import pytest

from replog.client.consumer import _position_past, _Positions
from replog.client.fetcher import Chunk, _divergent_offset
from replog.client.metadata import bootstrap_addresses
from replog.common.core.partitions import TopicPartition
from replog.common.records import decode_records, encode_batch, encode_empty_batch, iter_batches


def test_a_bootstrap_string_is_split_at_commas_not_into_characters():
    assert bootstrap_addresses("a:1, b:2,") == ["a:1", "b:2"]
    assert bootstrap_addresses(["a:1", "[::1]:9092"]) == ["a:1", "[::1]:9092"]
    with pytest.raises(ValueError, match="host:port"):
        bootstrap_addresses("a")


@pytest.mark.parametrize("position, asked, found, end, divergent", [
    (200, 0, 0, 100, 100),    # the epoch ends below the position: records 100.. are not the same ones
    (200, 0, 0, 200, None),   # it ends exactly at the position: nothing read was lost
    (150, 3, 2, 120, 120),    # the leader never had epoch 3: it diverges where its epoch 2 ended
    (150, 3, 3, 400, None),   # the epoch goes on past the position
    (150, 3, -1, -1, None),   # the leader knows nothing that old: nothing can be told
])
def test_where_a_leaders_log_diverges_from_a_fetch_position(position, asked, found, end, divergent):
    assert _divergent_offset(position, asked, found, end) == divergent


def test_positions_take_a_topic_partition_or_a_bare_number_of_the_one_topic():
    positions = _Positions(["orders"])
    positions[TopicPartition("orders", 3)] = 42
    assert positions[3] == 42 and positions.get(3) == 42 and positions.get(4, 0) == 0
    several = _Positions(["a", "b"])
    several[TopicPartition("a", 0)] = 1
    with pytest.raises(KeyError):
        several[0]


def test_a_chunk_of_only_an_empty_batch_moves_the_position_past_its_last_offset():
    """A compacted log's cleaner leaves empty batches (records/batch.py): no record for the caller, but the
    position goes past them, as the fetcher's did, up to the high watermark."""
    tp = TopicPartition("orders", 0)
    empty = encode_empty_batch(base_offset=10, last_offset_delta=4, leader_epoch=3, timestamp_ms=0,
                               producer_id=1, producer_epoch=0, base_sequence=0)
    ends = tuple((h.base_offset, h.next_offset, h.partition_leader_epoch) for _, h in iter_batches(empty))
    chunk = Chunk(tp, 0, empty, 10, high_watermark=100, batch_ends=ends)
    assert decode_records(chunk.records, start_offset=10) == []
    assert _position_past(chunk, 10) == 15
    assert _position_past(Chunk(tp, 0, empty, 10, high_watermark=12, batch_ends=ends), 10) == 12
    below = encode_batch([(b"k", b"v", 0)], base_offset=5)  # records already returned
    assert _position_past(Chunk(tp, 0, below, 5, 100, batch_ends=((5, 6, 3),)), 6) == 6
