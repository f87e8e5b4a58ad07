"""Helpers for the partition log tests: small segments so that rolls happen often."""

from __future__ import annotations

from pathlib import Path

import pytest

from replog.broker.log import LogConfig, PartitionLog
from replog.common.clock import ManualClock
from replog.common.records import encode_batch

T0_MS = 1_700_000_000_000


def make_batch(record_count: int = 1, value_bytes: int = 50, timestamp_ms: int = T0_MS, **kwargs) -> bytes:
    """A producer batch of `record_count` records, all stamped `timestamp_ms`."""
    return encode_batch(
        [(b"k%d" % i, b"v" * value_bytes, timestamp_ms) for i in range(record_count)], **kwargs
    )


class LogFactory:
    def __init__(self, tmp_path: Path) -> None:
        self.directory = tmp_path / "orders-0"
        self.clock = ManualClock(T0_MS)

    batch = staticmethod(make_batch)

    def open(self, **config) -> PartitionLog:
        return PartitionLog.open(self.directory, LogConfig(**config), self.clock)


@pytest.fixture
def logs(tmp_path: Path) -> LogFactory:
    return LogFactory(tmp_path)
