"""The replication throttle for reassignment traffic (docs/operations.md, "Adding a broker and moving replicas to it";
the role of Kafka's leader.replication.throttled.rate).

The admin gateway stores a rate in ``/config/reassignment_throttle`` (bytes per
second, 0 for none) when a reassignment is executed with ``--throttle``. As a
leader, this broker sends records to a follower that a reassignment is adding
only as the throttle allows: one token bucket for all such traffic of the
broker, refilled at the rate and holding at most one second's worth. A read may
overdraw the bucket by one batch (a follower always gets at least one batch, or
it could never pass a large one); the debt is paid before the next read, so the
rate holds on average. A partition the bucket cannot serve stays pending in its
fetch session (fetch_sessions.py) and is read again on the follower's next
request. Followers not being added -- the ISR that clients wait for -- are
never throttled.
"""

from __future__ import annotations

import logging
import threading

from kazoo.recipe.watchers import DataWatch

from replog.common.clock import Clock
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)


class ReplicationThrottle:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._rate = 0  # bytes per second; 0 = unthrottled
        self._tokens = 0.0
        self._refilled_ms = 0

    @property
    def rate(self) -> int:
        return self._rate

    def set_rate(self, bytes_per_s: int) -> None:
        with self._lock:
            if bytes_per_s != self._rate:
                log.info("reassignment replication throttle: %s",
                         f"{bytes_per_s} bytes/s" if bytes_per_s else "none")
            self._rate = bytes_per_s
            self._tokens = float(bytes_per_s)
            self._refilled_ms = self._clock.monotonic_ms()

    def allowance(self) -> int | None:
        """Bytes that may be sent now (0: none); None when there is no throttle."""
        with self._lock:
            if not self._rate:
                return None
            now_ms = self._clock.monotonic_ms()
            self._tokens = min(float(self._rate), self._tokens + (now_ms - self._refilled_ms) * self._rate / 1000)
            self._refilled_ms = now_ms
            return int(self._tokens) if self._tokens >= 1 else 0

    def record(self, sent_bytes: int) -> None:
        with self._lock:
            if self._rate:
                self._tokens -= sent_bytes

    def watch(self, zk: ZkClient) -> None:
        """Follow the rate in ZooKeeper; the first value is read before returning."""

        def on_change(data, stat) -> bool:
            rate = 0
            if data:
                try:
                    rate = schema.ReassignmentThrottle.decode(data).bytes_per_s
                except schema.ZkDataError as exc:
                    log.error("ignoring the reassignment throttle: %s", exc)
            self.set_rate(rate)
            return True

        DataWatch(zk.kazoo, schema.REASSIGNMENT_THROTTLE, on_change)
