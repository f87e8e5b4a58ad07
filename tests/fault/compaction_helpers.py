"""The end of a compaction fault test, shared by the kill and the power-loss tests: every broker settles on
exactly the latest acknowledged record of each key with no rewrite left half-done, and the consumer's read
and every replica's files are judged against the recorded history (history/compacted.py)."""

from __future__ import annotations

import random
import time
from pathlib import Path

from tests.fault.history import compacted
from tests.fault.history.compacted import KeyedSends, keyed_log, read_to_end
from tests.fault.history.history import History, Ok
from tests.integration.broker_helpers import describe, wait_for
from tests.integration.test_compaction import holds_exactly, mismatch, replica_records

BROKERS = (1, 2, 3)


def send_keyed(sends: KeyedSends, rng: random.Random, count: int, *, keys: int, pad_bytes: int) -> list:
    """`count` writes over `keys` keys (10% tombstones), acks=all, not waited for: (key, value, handle) each."""
    pending = []
    for _ in range(count):
        key = b"key-%03d" % rng.randrange(keys)
        pending.append((key, *sends.send(key, tombstone=rng.random() < 0.1, pad_bytes=pad_bytes)))
    return pending


def acknowledged(pending: list, final: dict) -> None:
    """Wait for every write of `pending` (the producer retries through the faults); each counts in `final`,
    the latest acknowledged value of each key, once it is."""
    for key, value, handle in pending:
        handle.result(90)
        final[key] = value


def leftovers(cluster, broker_id: int, topic: str) -> list[str]:
    """The files of a rewrite the cleaner left in the partition's directory (a `.cleaned` or `.swap`)."""
    directory = cluster.data_dir(f"broker-{broker_id}") / f"{topic}-0"
    return [p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap"))]


def settle_and_judge(cluster, bootstrap: list[str], history: History, topic: str,
                     final: dict[bytes, bytes | None], *, delete_retention_ms: int, deadline_s: float,
                     history_file: Path) -> list:
    """Wait for every broker to hold exactly `final` and no leftover, judge what the consumer reads and
    what each replica holds against `history` (asserting no violation), and return the consumer's read."""
    for broker_id in BROKERS:
        try:
            wait_for(lambda b=broker_id: not leftovers(cluster, b, topic) and holds_exactly(
                replica_records(cluster, b, topic), final), deadline_s,
                f"broker {broker_id} to hold exactly the latest acknowledged record of each key")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {mismatch(replica_records(cluster, broker_id, topic), final)}; "
                                 f"leftovers {leftovers(cluster, broker_id, topic)}") from None
    ends = {describe(cluster, b, topic).log_end_offset for b in BROKERS}
    assert len(ends) == 1
    read = read_to_end(bootstrap, topic, ends.pop())
    reads = {"the consumer's read": (keyed_log(read), time.monotonic())}
    replicas = {}
    for broker_id in BROKERS:
        replicas[broker_id] = keyed_log(replica_records(cluster, broker_id, topic))
        reads[f"broker {broker_id}'s files"] = (replicas[broker_id], time.monotonic())
    violations = compacted.judge(history.events(), topic, delete_retention_ms, reads, replicas)
    assert not violations, "\n".join(violations[:20]) + f"\nhistory: {history.dump(history_file)}"
    print(f"history: {sum(isinstance(e, Ok) for e in history.events())} writes acknowledged; held: " +
          ", ".join(f"{name} {len(log)}" for name, (log, _) in reads.items()))
    return read
