"""Bit rot on a leader, with real processes (issue 40): the leader's scrubber finds a damaged rolled
segment and gives up leadership of the partition; another ISR member leads with every acknowledged
record; the old leader, now a follower, cuts the damaged segment, fetches it again and rejoins the ISR."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from replog.client import Consumer
from replog.common.records import CorruptRecordError, decode_records
from replog.devcluster import ClusterSpec

from .broker_helpers import (
    batch_of,
    create_topic,
    produce_raw,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.integration

DEADLINE_S = 60  # generous: the machine is shared
TOPIC = "rotting"
SEGMENT_BYTES = 4096
VALUES = [b"record-%03d-" % i + b"v" * 400 for i in range(40)]  # one record a batch: about 10 segments


@pytest.fixture
def cluster(tmp_path):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path)
    cluster = factory(ClusterSpec(controllers=1, brokers=3, gateways=0, extra_args={"broker": [
        "--log-scrub-bytes-per-second", str(4 * 1024 * 1024)]}))
    yield cluster
    factory.teardown()


def segment_files(cluster, broker_id: int) -> list[Path]:
    return sorted((cluster.data_dir(f"broker-{broker_id}") / f"{TOPIC}-0").glob("*.log"))


def flip_a_byte(path: Path) -> None:
    """Bit rot inside the last record of a rolled segment, written in place as a disk would return it."""
    fd = os.open(path, os.O_RDWR)
    try:
        position = os.fstat(fd).st_size - 3
        (byte,) = os.pread(fd, 1, position)
        os.pwrite(fd, bytes([byte ^ 0x10]), position)
    finally:
        os.close(fd)


def values_on_disk(cluster, broker_id: int) -> list[bytes] | None:
    """The broker's copy of the partition read from its segment files; None while a batch fails its check
    or a segment listed is gone before it is read (the broker is cutting the log)."""
    try:
        data = b"".join(path.read_bytes() for path in segment_files(cluster, broker_id))
        records = decode_records(data)
    except (CorruptRecordError, FileNotFoundError):
        return None
    return [r.value for r in records]


def test_a_leader_with_a_damaged_segment_hands_over_then_repairs_its_copy(cluster):
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {0: (1, 2, 3)}, {"segment.bytes": str(SEGMENT_BYTES), "min.insync.replicas": "2"})
        state = wait_for_leader(cluster, zk, TOPIC, 1, DEADLINE_S, followers=(2, 3))
        for value in VALUES:
            answer = produce_raw(cluster, 1, TOPIC, batch_of([value]))
            assert answer.error_code == 0, answer.error_message
        wait_caught_up(cluster, (1, 2, 3), TOPIC, len(VALUES), DEADLINE_S)
        rolled = segment_files(cluster, 1)[:-1]
        assert len(rolled) >= 3

        flip_a_byte(rolled[1])

        moved = wait_for(lambda: (s := wait_for_leader(cluster, zk, TOPIC, None, DEADLINE_S)).leader != 1 and s,
                         DEADLINE_S, "leadership of the damaged partition to leave broker 1")
        assert moved.leader_epoch > state.leader_epoch

        # the old leader, now a follower, cut the damaged segment and fetched it again: its files read back
        # the leader's records; and it is back in the ISR
        wait_for(lambda: values_on_disk(cluster, 1) == VALUES, DEADLINE_S, "broker 1's copy to be whole again")
        wait_for_isr(cluster, zk, TOPIC, {1, 2, 3}, DEADLINE_S)

    with Consumer([p.address for p in cluster.of_role("broker")], TOPIC, start=0) as consumer:
        seen = []
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < len(VALUES) and time.monotonic() < deadline:
            seen += consumer.poll(500)
    assert [r.offset for r in seen] == list(range(len(VALUES)))
    assert [r.value for r in seen] == VALUES  # every acknowledged record, as it was written
    assert values_on_disk(cluster, moved.leader) == VALUES
