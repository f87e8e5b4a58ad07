"""What the clients saw, as a list of events: the history the checker judges.

Every send is recorded when it is invoked and when it is answered: ok with the offset the leader
gave, fail with the error, or indeterminate when the run ends without an answer. Every record a
consumer read is recorded with its offset. Times are `time.monotonic()` seconds. The recorder is
shared by the workload's threads (one lock); the checker reads the frozen events only.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Invoke:
    """A send. On a compacted topic a send carries its `key`, and a tombstone (value None) says so."""
    at_s: float
    producer: int
    seq: int
    topic: str
    partition: int
    key: bytes | None = None
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class Ok:
    at_s: float
    producer: int
    seq: int
    offset: int


@dataclass(frozen=True, slots=True)
class Fail:
    at_s: float
    producer: int
    seq: int
    error: str


@dataclass(frozen=True, slots=True)
class Indeterminate:
    at_s: float
    producer: int
    seq: int


@dataclass(frozen=True, slots=True)
class Read:
    at_s: float
    consumer: int
    topic: str
    partition: int
    offset: int
    value: bytes | None


@dataclass(frozen=True, slots=True)
class ClientError:
    """A consumer's poll that raised (an offset out of range after a truncation, say)."""
    at_s: float
    consumer: int
    topic: str
    error: str


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment of the run: load started, fault injected, healed, load stopped."""
    at_s: float
    name: str


Event = Invoke | Ok | Fail | Indeterminate | Read | ClientError | Mark


def record_value(producer: int, seq: int) -> bytes:
    """A record's value names its producer and sequence number, so any copy of it is recognised."""
    return b"p%d-s%d" % (producer, seq)


class History:
    def __init__(self) -> None:
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def add(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)

    def extend(self, events: list[Event]) -> None:
        with self._lock:
            self._events.extend(events)

    def events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    def mark(self, name: str, at_s: float) -> None:
        self.add(Mark(at_s, name))

    def dump(self, path: Path) -> Path:
        """Write the history as JSON lines (one event a line, its kind under "event")."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as out:
            for event in self.events():
                fields = {name: value.decode(errors="replace") if isinstance(value, bytes) else value
                          for name, value in asdict(event).items()}
                out.write(json.dumps({"event": type(event).__name__, **fields}) + "\n")
        return path
