"""Retention with real processes: by size and by time, on the leader and every follower, the log
start offset they report, and a consumer that finds its offset deleted (issue 41)."""

from __future__ import annotations

import time

import pytest

from replog.client import Consumer
from replog.client.results import ConsumerError
from replog.v1 import common_pb2

from .gateway_helpers import cli_runner
from .retention_helpers import DEADLINE_S, create, earliest, module_cluster, produce, replicas, wait_for

pytestmark = pytest.mark.integration

SEGMENT_BYTES = 4096
RETENTION_BYTES = 16384
VALUE = b"v" * 400  # one record a batch: about 470 bytes on disk


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from module_cluster(tmp_path_factory, "retention")


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def test_retention_bytes_keeps_every_replica_within_one_segment_of_the_bound(cluster, replog):
    brokers = create(cluster, replog, "bounded", {"segment.bytes": str(SEGMENT_BYTES),
                                                 "retention.bytes": str(RETENTION_BYTES), "min.insync.replicas": "2"})
    bound = RETENTION_BYTES + SEGMENT_BYTES
    previous_starts = {b: 0 for b in brokers}
    for round_number in range(3):  # the log keeps growing; retention keeps catching up on every replica
        for _ in range(80):
            produce(cluster, "bounded", [VALUE])

        def trimmed():
            found = replicas(cluster, "bounded", brokers)
            return len(found) == len(brokers) and all(
                d.size_bytes <= bound and d.log_start_offset > previous_starts[b] for b, d in found.items()) and found

        found = wait_for(trimmed, DEADLINE_S, f"every replica of 'bounded' within {bound} bytes, round {round_number}")
        previous_starts = {b: d.log_start_offset for b, d in found.items()}
    end = max(d.log_end_offset for d in found.values())
    assert end == 240
    # The start rose on the leader and the followers alike, and what is left is readable from it.
    leader = brokers[0]
    start = earliest(cluster, leader, "bounded").offset
    assert 0 < start < end and start == found[leader].log_start_offset
    with Consumer(bootstrap(cluster), "bounded", start=start) as consumer:
        seen = []
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < end - start and time.monotonic() < deadline:
            seen += consumer.poll(500)
    assert [r.offset for r in seen[:end - start]] == list(range(start, end))


def test_retention_ms_deletes_the_segments_whose_records_aged_out_and_a_consumer_below_the_start(cluster, replog):
    brokers = create(cluster, replog, "aging", {"segment.bytes": str(SEGMENT_BYTES), "retention.ms": "3600000"})
    two_hours_ago = int(time.time() * 1000) - 2 * 3600 * 1000
    for _ in range(30):  # records stamped two hours ago: older than retention.ms, in several rolled segments
        produce(cluster, "aging", [VALUE], timestamp_ms=two_hours_ago)
    first_recent = produce(cluster, "aging", [VALUE])
    for _ in range(19):
        produce(cluster, "aging", [VALUE])

    def aged_out():
        found = replicas(cluster, "aging", brokers)
        return len(found) == len(brokers) and all(d.log_start_offset > 0 for d in found.values()) and found

    found = wait_for(aged_out, DEADLINE_S, "the old segments of 'aging' to go on every replica")
    per_segment = SEGMENT_BYTES // 470 + 1
    for broker_id, description in found.items():
        # Whole segments only: the one holding the first recent record stays, with the old records before it.
        assert first_recent - per_segment <= description.log_start_offset <= first_recent, (broker_id, description)
    start = found[brokers[0]].log_start_offset

    with Consumer(bootstrap(cluster), "aging", start=0) as consumer:
        with pytest.raises(ConsumerError) as raised:
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                consumer.poll(500)
        assert raised.value.code == common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE
        assert f"outside [{start}," in str(raised.value)
    with Consumer(bootstrap(cluster), "aging", start=0, reset_out_of_range=True) as consumer:
        seen = []
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < 50 - start and time.monotonic() < deadline:
            seen += consumer.poll(500)
    assert [r.offset for r in seen] == list(range(start, 50))


def test_a_retention_change_applies_to_the_running_partition(cluster, replog):
    brokers = create(cluster, replog, "kept", {"segment.bytes": str(SEGMENT_BYTES)})
    for _ in range(30):
        produce(cluster, "kept", [VALUE])
    # retention.bytes is not set: nothing goes, however many retention rounds pass
    assert all(d.log_start_offset == 0 for d in replicas(cluster, "kept", brokers).values())
    code, _, err = replog("topics", "alter", "kept", "--config", f"retention.bytes={SEGMENT_BYTES}")
    assert code == 0, err

    def trimmed():
        found = replicas(cluster, "kept", brokers)
        return len(found) == len(brokers) and all(
            d.log_start_offset > 0 and d.size_bytes <= 2 * SEGMENT_BYTES for d in found.values())

    wait_for(trimmed, DEADLINE_S, "'kept' to be trimmed on every replica after retention.bytes was set")
