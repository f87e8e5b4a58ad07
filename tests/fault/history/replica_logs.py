"""Each replica's records as its own files hold them, read with the broker's own log reader.

Read after the brokers stopped (a stopped broker's files are still and complete): the brokers'
API serves a partition's records from its leader only, so a follower's copy is honestly seen only
on its disk. `PartitionLog.open` recovers the files as the broker would at its next start.
"""

from __future__ import annotations

from pathlib import Path

from replog.broker.log.config import LogConfig
from replog.broker.log.partition_log import PartitionLog
from replog.broker.logdirs.partition_dirs import partition_directory
from replog.common.clock import SystemClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import decode_records, iter_batches

READ_BYTES = 8 * 1024 * 1024


def read_replica(log_dir: Path, topic: str, partition: int, upper_offset: int) -> dict[int, bytes]:
    """The records below `upper_offset` in one broker's copy of the partition (offset -> value)."""
    directory = partition_directory(log_dir, TopicPartition(topic, partition))
    if not directory.exists():
        return {}
    log = PartitionLog.open(directory, LogConfig(), SystemClock())
    try:
        out: dict[int, bytes] = {}
        offset = log.log_start_offset
        while offset < min(upper_offset, log.log_end_offset):
            chunk = log.read(offset, READ_BYTES, upper_offset=upper_offset)
            batch_ends = [header.next_offset for _, header in iter_batches(chunk)]
            if not batch_ends:
                break
            out.update((r.offset, r.value) for r in decode_records(chunk, start_offset=offset))
            offset = batch_ends[-1]  # past a compacted log's gaps and empty batches, which hold no record
        return out
    finally:
        log.close()
