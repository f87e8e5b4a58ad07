"""Opt-in timestamps at each hop of the produce path, to see where an acks=all write's time goes.

Why: an acks=all write at a fixed rate is a chain across four processes
(producer, leader, two followers), and its latency is the sum of a dozen hops,
each a fraction of a millisecond: too many and too short for a trace span each
(thousands per second), and profiles show where CPU goes, not where a message
waits. `bench/produce.py --hops` sets REPLOG_HOP_MARKS_DIR for the cluster and
itself, and then matches the marks of every cycle (bench/hops.py).

With the variable unset (always, outside that benchmark) `mark` does nothing
but return. Set, each process keeps `(time_ns, tag, arg)` in memory and
appends them to `<dir>/<pid>.marks`, one "time_ns tag arg" line each, every
MARKS_PER_WRITE marks and at exit. Each hop is a member of `Hop`, named for
where it is taken; its value is the short label written to the file, which
bench/hops.py, the only reader, parses.
"""

from __future__ import annotations

import atexit
import enum
import os
import threading
import time

ENV = "REPLOG_HOP_MARKS_DIR"
MARKS_PER_WRITE = 2000


class Hop(enum.StrEnum):
    """One hop of an acks=all produce cycle, in the chain's order; the value is the label on file."""

    PRODUCER_SENDS = "P1"  # the producer queues a request on its ProduceStream
    LEADER_HAS_REQUEST = "L1"  # the leader's stream reader has the request
    LEADER_APPENDED = "L2"  # the leader appended it (acks=all: parked for the HW)
    LEADER_ANSWERS_FOLLOWER = "L3"  # a fetch answer for a follower is built, about to be sent
    FOLLOWER_HAS_ANSWER = "F1"  # the follower's fetcher has the answer
    FOLLOWER_APPENDED = "F2"  # the follower handled the answer (appended)
    FOLLOWER_SENDS_FETCH = "F3"  # the follower sends its next fetch, carrying its new end offset
    LEADER_HAS_FETCH = "L4"  # the leader's fetch handler has the follower's request (the HW may move)
    LEADER_ANSWERS_PRODUCER = "L5"  # the produce answer is built, about to be sent
    PRODUCER_HAS_ANSWER = "P4"  # the producer has the answer


_lock = threading.Lock()
_marks: list[tuple[int, str, int]] = []
_path: str | None = None
_enabled: bool | None = None  # decided at the first mark, so a process may set the variable first


def mark(hop: Hop, arg: int = -1) -> None:
    """Record that this process passed `hop` now (`arg`: which broker, where that matters)."""
    if _enabled is False:
        return
    if _enabled is None and not _enable():
        return
    with _lock:
        _marks.append((time.time_ns(), hop, arg))
        if len(_marks) >= MARKS_PER_WRITE:
            _write_locked()


def _enable() -> bool:
    global _enabled, _path
    with _lock:
        if _enabled is None:
            directory = os.environ.get(ENV)
            _enabled = bool(directory)
            if _enabled:
                _path = os.path.join(directory, f"{os.getpid()}.marks")
                atexit.register(flush)
    return _enabled


def flush() -> None:
    """Write the marks held in memory (the benchmark's own process calls it before reading)."""
    with _lock:
        _write_locked()


def _write_locked() -> None:
    if not _marks or _path is None:
        return
    lines = "".join(f"{t} {tag} {arg}\n" for t, tag, arg in _marks)
    _marks.clear()
    with open(_path, "a", encoding="ascii") as out:
        out.write(lines)
