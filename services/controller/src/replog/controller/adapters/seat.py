"""Controller seat: election through the ephemeral /controller znode.

Whoever creates /controller holds the seat and then increments
/controller_epoch with a version check, so two winners can never share an
epoch. The znode version of /controller_epoch after that write is the fence:
every later controller write is a ZooKeeper `multi` that checks it, so a
controller that lost its seat (session expired, paused past its timeout) can
write nothing (KAFKA-6082). Standbys watch /controller and try again when it
disappears.

A ZooKeeper server that dies takes only its connections with it: kazoo reports the
session "suspended", moves to another server of the ensemble and resumes the same
session ("connected"), whose ephemeral /controller is still there. So a suspension
alone does not end the seat; it ends when the session is known lost ("lost": it
expired) or must be (suspended for longer than the session timeout: the servers
have expired it by then, and a standby may hold the seat). In between, another
controller may already have won; every write this one makes is still fenced by
the /controller_epoch check and every broker request by the controller epoch,
as for a controller that was paused.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Seat:
    """What winning the seat gives: the controller epoch and the fence version."""

    controller_epoch: int
    controller_epoch_zk_version: int


class SeatElector:
    """Runs the election; calls `on_elected(seat)` / `on_resigned()` from its own thread."""

    def __init__(
        self,
        zk: ZkClient,
        controller_id: int,
        address: tuple[str, int],
        on_elected: Callable[[Seat], None],
        on_resigned: Callable[[], None],
    ) -> None:
        self._zk = zk
        self._controller_id = controller_id
        self._address = address
        self._on_elected = on_elected
        self._on_resigned = on_resigned
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._seat: Seat | None = None
        self._suspended_timer: threading.Timer | None = None
        self._thread = threading.Thread(target=self._run, name="seat-elector", daemon=True)
        zk.add_session_listener(self._on_session)

    @property
    def seat(self) -> Seat | None:
        return self._seat

    def start(self) -> None:
        self._wake.set()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._seat is not None:
            try:
                # Give the seat back at once so a standby need not wait for the session to expire.
                data, _ = self._zk.kazoo.get(schema.CONTROLLER)
                if schema.ControllerRecord.decode(data).controller_id == self._controller_id:
                    self._zk.kazoo.delete(schema.CONTROLLER)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        self._thread.join(timeout=5)

    def give_up(self, reason: str) -> None:
        """Leave the seat (the loop found it lost, or failed) and stand for election again."""
        if self._seat is None:
            return
        self._resign(reason)
        try:
            data, _ = self._zk.kazoo.get(schema.CONTROLLER)
            if schema.ControllerRecord.decode(data).controller_id == self._controller_id:
                self._zk.kazoo.delete(schema.CONTROLLER)
        except Exception:  # noqa: BLE001 - the znode may be gone with the session
            pass
        self._wake.set()

    def _on_session(self, state: str) -> None:
        if self._suspended_timer is not None:
            self._suspended_timer.cancel()
            self._suspended_timer = None
        if state == "lost" and self._seat is not None:
            self._resign("zookeeper session lost (expired)")
        elif state == "suspended" and self._seat is not None:
            log.warning("zookeeper connection lost; keeping the seat while the session may live (%d ms)",
                        self._zk.session_timeout_ms)
            timer = threading.Timer(self._zk.session_timeout_ms / 1000, self._suspended_too_long)
            timer.daemon = True
            self._suspended_timer = timer
            timer.start()
        if state == "connected":
            self._wake.set()

    def _suspended_too_long(self) -> None:
        if self._zk.kazoo.connected:
            return
        self._resign(f"zookeeper session suspended for longer than its timeout ({self._zk.session_timeout_ms} ms)")

    def _resign(self, reason: str) -> None:
        if self._seat is None:
            return
        log.warning("resigning controller seat (epoch %d): %s", self._seat.controller_epoch, reason)
        self._seat = None
        self._on_resigned()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stopped.is_set() or self._seat is not None:
                continue
            try:
                self._try_elect()
            except Exception:  # noqa: BLE001 - a failed attempt is retried on the next wake
                log.exception("controller election attempt failed; retrying")
                time.sleep(0.5)
                self._wake.set()

    def _watch(self, event) -> None:
        if self._seat is not None and event.type == "DELETED":
            self._resign("/controller was deleted")
        self._wake.set()

    def _try_elect(self) -> None:
        kazoo = self._zk.kazoo
        host, port = self._address
        record = schema.ControllerRecord(self._controller_id, int(time.time() * 1000), host, port)
        try:
            kazoo.create(schema.CONTROLLER, record.encode(), ephemeral=True, acl=self._zk.acl(schema.CONTROLLER))
        except NodeExistsError:
            try:
                data, _ = kazoo.get(schema.CONTROLLER, watch=self._watch)
            except NoNodeError:
                self._wake.set()
                return
            holder = schema.ControllerRecord.decode(data).controller_id
            if holder != self._controller_id:
                log.info("controller %d holds the seat; standing by", holder)
                return
            # Our own znode from this session (e.g. a retried create): fall through.
        seat = self._bump_epoch()
        kazoo.exists(schema.CONTROLLER, watch=self._watch)
        self._seat = seat
        log.info("won the controller seat: controller_epoch=%d", seat.controller_epoch)
        self._on_elected(seat)

    def _bump_epoch(self) -> Seat:
        kazoo = self._zk.kazoo
        while True:
            try:
                data, stat = kazoo.get(schema.CONTROLLER_EPOCH)
            except NoNodeError:
                try:
                    kazoo.create(schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(1),
                                 acl=self._zk.acl(schema.CONTROLLER_EPOCH))
                    _, stat = kazoo.get(schema.CONTROLLER_EPOCH)
                    return Seat(1, stat.version)
                except NodeExistsError:
                    continue
            epoch = schema.decode_controller_epoch(data) + 1
            try:
                stat = kazoo.set(schema.CONTROLLER_EPOCH, schema.encode_controller_epoch(epoch), version=stat.version)
                return Seat(epoch, stat.version)
            except BadVersionError:
                continue
