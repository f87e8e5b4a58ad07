"""Small pure parts of the client (issue 59): bootstrap strings, where a new leader's log diverges from a
fetch position (KIP-320), and the positions map that still takes a bare partition number."""

from __future__ import annotations

import pytest

from replog.client.consumer import _Positions
from replog.client.fetcher import _divergent_offset
from replog.client.metadata import bootstrap_addresses
from replog.common.core.partitions import TopicPartition


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
