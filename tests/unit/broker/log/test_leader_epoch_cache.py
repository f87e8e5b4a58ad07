"""Leader-epoch cache semantics (KIP-101 / KIP-279), pure and through the log."""

from __future__ import annotations

import pytest

from replog.broker.log.checkpoints import read_leader_epoch_checkpoint
from replog.broker.log.leader_epoch_cache import LeaderEpochCache


def cache_of(*entries):
    return LeaderEpochCache(list(entries))


def test_end_offset_for_epoch_cases():
    cache = cache_of((1, 0), (3, 100), (6, 250))
    log_end_offset = 300
    assert cache.end_offset_for(1, log_end_offset) == (1, 100)  # ends where epoch 3 starts
    assert cache.end_offset_for(2, log_end_offset) == (1, 100)  # unknown epoch: the one below it
    assert cache.end_offset_for(3, log_end_offset) == (3, 250)
    assert cache.end_offset_for(5, log_end_offset) == (3, 250)
    assert cache.end_offset_for(6, log_end_offset) == (6, 300)  # latest: ends at the LEO
    assert cache.end_offset_for(9, log_end_offset) == (6, 300)  # newer than any known
    assert cache.end_offset_for(0, log_end_offset) == (-1, -1)  # older than any known
    assert cache.end_offset_for(-1, log_end_offset) == (-1, -1)
    assert cache_of().end_offset_for(5, 0) == (-1, -1)


def test_assign_adds_only_newer_epochs():
    cache = cache_of()
    assert cache.latest_epoch() == -1
    assert cache.assign(2, 0)
    assert not cache.assign(2, 10)  # same epoch, later batch
    assert not cache.assign(1, 20)  # older epoch: ignored
    assert not cache.assign(-1, 30)  # unstamped batch
    assert cache.assign(5, 40)
    assert cache.entries() == [(2, 0), (5, 40)] and cache.latest_epoch() == 5


def test_assign_drops_entries_at_or_after_the_new_start():
    cache = cache_of((1, 0), (2, 50))
    assert cache.assign(3, 50)
    assert cache.entries() == [(1, 0), (3, 50)]


def test_truncate_from_end():
    cache = cache_of((1, 0), (3, 100), (6, 250))
    assert not cache.truncate_from_end(251)
    assert cache.truncate_from_end(250)
    assert cache.entries() == [(1, 0), (3, 100)]
    assert cache.truncate_from_end(50)
    assert cache.entries() == [(1, 0)]
    assert cache.truncate_from_end(0)
    assert cache.entries() == []


def test_truncate_from_start():
    cache = cache_of((1, 0), (3, 100), (6, 250))
    assert not cache.truncate_from_start(0)
    assert cache.truncate_from_start(150)
    assert cache.entries() == [(3, 150), (6, 250)]
    assert cache.truncate_from_start(250)
    assert cache.entries() == [(6, 250)]


def test_out_of_order_entries_are_refused():
    with pytest.raises(AssertionError):
        cache_of((3, 0), (2, 10))


# -- through the log ---------------------------------------------------------------


def test_epoch_entries_follow_appends_and_truncation(logs):
    log = logs.open()
    for leader_epoch, batch_count in ((0, 2), (2, 3), (5, 1)):
        for _ in range(batch_count):
            log.append_as_leader(logs.batch(2), leader_epoch)
    assert log.epoch_entries() == [(0, 0), (2, 4), (5, 10)]
    assert log.latest_epoch() == 5
    assert log.end_offset_for_epoch(0) == (0, 4)
    assert log.end_offset_for_epoch(1) == (0, 4)
    assert log.end_offset_for_epoch(4) == (2, 10)
    assert log.end_offset_for_epoch(5) == (5, 12)
    assert log.end_offset_for_epoch(7) == (5, 12)

    # KIP-101: a follower whose latest epoch is 2 truncates to the leader's end offset for 2.
    log.truncate_to(log.end_offset_for_epoch(4)[1])
    assert log.epoch_entries() == [(0, 0), (2, 4)]
    assert log.end_offset_for_epoch(7) == (2, 10)
    assert read_leader_epoch_checkpoint(logs.directory / "leader-epoch-checkpoint") == [(0, 0), (2, 4)]
    log.truncate_to(3)  # inside the epoch-0 batch [2, 3]
    assert log.log_end_offset == 2 and log.epoch_entries() == [(0, 0)]
    log.append_as_leader(logs.batch(), leader_epoch=8)
    log.close()
    assert logs.open().epoch_entries() == [(0, 0), (8, 2)]
