"""A consumer-group member for the integration tests: polls on its own thread and commits what it processed."""

from __future__ import annotations

import threading
import time

from replog.client import Consumer


class GroupMember:
    """One member of `group_id` over `topic`, recording (partition, offset) of every record it processed into
    `seen` (under `lock`) and committing after each poll that returned records. `consumer_settings` go to the
    Consumer (session timeout, heartbeat interval, ...)."""

    def __init__(self, bootstrap: list[str], topic: str, group_id: str, name: str, seen: set,
                 lock: threading.Lock, **consumer_settings) -> None:
        self.consumer = Consumer(bootstrap, topic, group_id=group_id, client_id=name, auto_offset_reset="earliest",
                                 enable_auto_commit=False, **consumer_settings)
        self.seen, self.lock = seen, lock
        self.running = True
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while self.running:
                records = self.consumer.poll(200)
                with self.lock:
                    self.seen.update((r.partition, r.offset) for r in records)
                if records and self.running:
                    self.consumer.commit()
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def crash(self) -> None:
        """Stop polling and heartbeating without leaving the group, as a killed process would."""
        self.running = False
        self.thread.join(10)
        self.consumer._group._membership._stop.set()

    def close(self) -> None:
        self.running = False
        self.thread.join(30)
        self.consumer.close()


def until(check, what: str, deadline_s: float):
    """Poll `check` every 0.1 s until it returns something true (returned), or fail after `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out after {deadline_s} s waiting for {what}")
