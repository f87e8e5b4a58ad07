"""Refusals are logged once per (peer, method, reason) per interval, with what was left out counted."""

import logging

from replog.common.refusal_log import RefusalLog


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def refusal_log(now: list[float], **kwargs) -> tuple[RefusalLog, list[str]]:
    logger = logging.getLogger(f"test.refusals.{id(now)}")
    logger.propagate = False
    handler = Lines()
    logger.addHandler(handler)
    return RefusalLog(logger, lambda: now[0], interval_s=10, **kwargs), handler.lines


def test_a_flood_of_one_kind_is_one_line_per_interval_with_a_count():
    now = [0.0]
    refusals, lines = refusal_log(now)
    for _ in range(1000):
        refusals.refused("ipv4:10.0.0.9:4000", "LeaderAndIsr", "STALE_CONTROLLER_EPOCH", "epoch 2147483647")
    assert lines == ["refused LeaderAndIsr from ipv4:10.0.0.9:4000: STALE_CONTROLLER_EPOCH: epoch 2147483647"]
    now[0] = 10.5
    refusals.refused("ipv4:10.0.0.9:4000", "LeaderAndIsr", "STALE_CONTROLLER_EPOCH", "epoch 7")
    assert lines[1:] == [
        "refused LeaderAndIsr from ipv4:10.0.0.9:4000: STALE_CONTROLLER_EPOCH, 999 more in the last 10 s not logged",
        "refused LeaderAndIsr from ipv4:10.0.0.9:4000: STALE_CONTROLLER_EPOCH: epoch 7"]


def test_a_count_left_over_is_told_with_the_next_line_of_its_kind():
    now = [0.0]
    refusals, lines = refusal_log(now)
    now[0] = 6.0
    refusals.refused("a", "Fetch", "TOO_MANY_PARTITIONS", "first")
    refusals.refused("a", "Fetch", "TOO_MANY_PARTITIONS", "second")
    now[0] = 12.0  # a sweep runs (every 10 s) but forgets only kinds logged 10 s ago or more
    refusals.refused("b", "Fetch", "TOO_MANY_PARTITIONS", "other peer")
    now[0] = 16.5
    refusals.refused("a", "Fetch", "TOO_MANY_PARTITIONS", "third")
    assert lines == ["refused Fetch from a: TOO_MANY_PARTITIONS: first",
                     "refused Fetch from b: TOO_MANY_PARTITIONS: other peer",
                     "refused Fetch from a: TOO_MANY_PARTITIONS: third (1 more like it since the last such line)"]


def test_each_peer_method_and_reason_has_its_own_line():
    now = [0.0]
    refusals, lines = refusal_log(now)
    refusals.refused("a", "StopReplica", "INVALID_REQUEST")
    refusals.refused("b", "StopReplica", "INVALID_REQUEST")
    refusals.refused("a", "LeaderAndIsr", "INVALID_REQUEST")
    refusals.refused("a", "StopReplica", "FENCED_LEADER_EPOCH")
    refusals.refused("a", "StopReplica", "INVALID_REQUEST")
    assert len(lines) == 4


def test_many_kinds_are_bounded_and_counted_together():
    now = [0.0]
    refusals, lines = refusal_log(now, kinds_max=3)
    for peer in range(100):
        refusals.refused(f"ipv4:10.0.0.{peer}:1", "Produce", "TOO_MANY_PARTITIONS")
    assert len(lines) == 4 and "from *: other kinds" in lines[3]
