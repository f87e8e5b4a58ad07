"""Seeded random runs of appends, truncations, reopens and reads, checked against a list model.

On failure the assertion message carries the seed; rerun with that seed to reproduce.
"""

from __future__ import annotations

import random

import pytest

from replog.broker.log import LogConfig, PartitionLog
from replog.common.clock import ManualClock
from replog.common.records import decode_records, encode_batch, iter_batches

T0_MS = 1_700_000_000_000


@pytest.mark.parametrize("seed", range(12))
def test_log_matches_a_list_model(tmp_path, seed):
    rng = random.Random(seed)
    config = LogConfig(segment_bytes=rng.choice([400, 1500, 10_000]), index_interval_bytes=rng.choice([64, 300]))
    clock = ManualClock(T0_MS)
    log = PartitionLog.open(tmp_path / "p-0", config, clock)
    model: list[tuple[bytes, int]] = []  # (value, timestamp_ms) by offset
    batch_starts: list[int] = []
    leader_epoch = 0
    for step in range(150):
        where = f"seed {seed} step {step}"
        action = rng.random()
        if action < 0.6:
            if rng.random() < 0.1:
                leader_epoch += 1
            values = [rng.randbytes(rng.randint(0, 60)) for _ in range(rng.randint(1, 6))]
            timestamp_ms = T0_MS + step
            info = log.append_as_leader(
                encode_batch([(None, v, timestamp_ms) for v in values]), leader_epoch, fsync=rng.random() < 0.05
            )
            assert info.base_offset == len(model), where
            batch_starts.append(len(model))
            model += [(v, timestamp_ms) for v in values]
        elif action < 0.7 and model:
            target = rng.randint(0, len(model))
            log.truncate_to(target)
            kept = [start for start in batch_starts if start < target]
            if target < len(model):
                end = max((s for s in batch_starts if s <= target), default=0)
                kept = [s for s in batch_starts if s < end]
                del model[end:]
            batch_starts = kept
        elif action < 0.8:
            log.close()
            log = PartitionLog.open(tmp_path / "p-0", config, clock, recovery_point=rng.choice([None, 0]))
            assert log.recovery_report.clean, where
        assert log.log_end_offset == len(model), where
        if model:
            start = rng.randint(0, len(model) - 1)
            upper_offset = rng.choice([None, rng.randint(0, len(model))])
            data = log.read(start, rng.randint(1, 3000), upper_offset)
            got = [(r.offset, r.value, r.timestamp_ms) for r in decode_records(data)]
            if upper_offset is not None and upper_offset <= start:
                assert got == [], where
                continue
            first = max(s for s in batch_starts if s <= start)
            assert got[0][0] == first, where
            assert got == [(first + i, *model[first + i]) for i in range(len(got))], where
            bases = [h.base_offset for _, h in iter_batches(data)]
            assert upper_offset is None or bases[-1] < upper_offset, where
    assert log.verify() == [], f"seed {seed}"
    leader_epochs = [e for e, _ in log.epoch_entries()]
    assert leader_epochs == sorted(set(leader_epochs)), f"seed {seed}"
    log.close()
