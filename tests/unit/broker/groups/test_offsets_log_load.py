"""A coordinator taking over an offsets partition replays its log (groups/offsets_log.py): across a
compacted log's gaps and empty batches, to the high watermark."""

from __future__ import annotations

from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.groups.offsets_log import READ_BYTES_MAX, OffsetsLog
from replog.broker.log import LogConfig, PartitionLog
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import encode_batch, encode_empty_batch

TP = TopicPartition("__consumer_offsets", 0)
T0_MS = 1_700_000_000_000
BIG = b"x" * (READ_BYTES_MAX + 1)  # read on its own: a read before it ends at the empty batch


def test_the_replay_reads_past_gaps_and_empty_batches_to_the_high_watermark(tmp_path):
    clock = ManualClock(T0_MS)
    log = PartitionLog.open(tmp_path / "__consumer_offsets-0", LogConfig(max_batch_bytes=2 * READ_BYTES_MAX, segment_bytes=4 * READ_BYTES_MAX), clock)
    # as a leader's cleaner left them: offsets 0-1, a gap, an empty batch (6-8), then offset 9
    log.append_as_follower(
        encode_batch([(b"g1", b"a", T0_MS), (b"g2", b"b", T0_MS)], base_offset=0, leader_epoch=0)
        + encode_empty_batch(base_offset=6, last_offset_delta=2, leader_epoch=0, timestamp_ms=T0_MS,
                             producer_id=5, producer_epoch=0, base_sequence=3)
        + encode_batch([(b"g3", BIG, T0_MS)], base_offset=9, leader_epoch=0))
    hosted = HostedPartition(TP, 1, log, high_watermark=log.log_end_offset, producer_state=rebuild_from_log(log))
    hosted.apply_leader_and_isr(LeaderAndIsrDecision(TP, 1, 1, (1,), 0, (1,)), now_ms=0)
    offsets_log = OffsetsLog(None, lambda tp: hosted, append_timeout_ms=1000, now_ms=clock.now_ms)
    assert list(offsets_log.read_all(TP, 1)) == [(0, b"g1", b"a"), (1, b"g2", b"b"), (9, b"g3", BIG)]
