"""Producer state from the log: batch headers in the core's shape (KIP-98 replay).

The leader records each batch it appends, a follower each batch it replicates,
and a replica rebuilds the whole table from its log on start-up and after a
truncation. Header reads only: no record is decoded. `PARTITION_LOG_PRODUCERS` is
what the core's partition steps read producers with (core/step_log.ProducerBatches).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from replog.broker.core.produce.producer_state import (
    NO_PRODUCER_ID,
    BatchHeader,
    ProducerStateLimits,
    ProducerStateTable,
    rebuild_producer_state,
    sequence_after,
)
from replog.common import records
from replog.common.records import iter_batches


def producer_header(header: records.BatchHeader) -> BatchHeader | None:
    """The core's view of a stored batch; None for a batch without a producer id."""
    if header.producer_id == NO_PRODUCER_ID or header.base_sequence < 0 or header.producer_epoch < 0:
        return None
    return BatchHeader(
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        # the offset delta, not the record count: the cleaner's empty batch keeps the first, not the second
        last_sequence=sequence_after(header.base_sequence, header.last_offset_delta),
        base_offset=header.base_offset,
        last_offset=header.last_offset,
        max_timestamp_ms=header.max_timestamp_ms,
    )


def _producer_headers(headers: Iterable[records.BatchHeader]) -> Iterator[BatchHeader]:
    for header in headers:
        converted = producer_header(header)
        if converted is not None:
            yield converted


def record_batches(table: ProducerStateTable, headers: Iterable[records.BatchHeader]) -> None:
    """Record every producer batch among `headers` (of whole batches, already appended; a follower
    append reports them, `AppendInfo.headers`, so the batches are not walked a second time)."""
    table.replay(_producer_headers(headers))


def rebuild_from_log(log, limits: ProducerStateLimits = ProducerStateLimits()) -> ProducerStateTable:
    """The table a replica derives from its whole log (`PartitionLog.iter_batch_headers`); the batches'
    timestamps come along, so a producer expires after a restart when it would have without one."""
    return rebuild_producer_state(_producer_headers(log.iter_batch_headers()), limits)


class _PartitionLogProducers:
    """`core.step_log.ProducerBatches` for PartitionLog's record batches."""

    def stored(self, header: records.BatchHeader, base_offset: int) -> BatchHeader | None:
        if header.producer_id < 0:
            return None
        return producer_header(header.stamped(base_offset, header.partition_leader_epoch))

    def replicated(self, appended) -> Iterator[BatchHeader]:
        return _producer_headers(appended.headers)

    def written_below(self, batches: bytes, first_offset: int, end_offset: int) -> Iterator[BatchHeader]:
        return _producer_headers(header for _, header in iter_batches(batches)
                                 if first_offset <= header.base_offset < end_offset)

    def rebuild(self, log, limits: ProducerStateLimits) -> ProducerStateTable:
        return rebuild_from_log(log, limits)


PARTITION_LOG_PRODUCERS = _PartitionLogProducers()
