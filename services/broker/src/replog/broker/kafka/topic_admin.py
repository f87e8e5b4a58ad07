"""CreateTopics and DeleteTopics for the Kafka listener: the admin gateway's decisions and ZooKeeper
writes (replog.common.topic_admin), with a refusal turned into Kafka's per-topic error code.

The handler authorizes the client first (access.py: the gateway's CreateTopic/DeleteTopic rules);
here the topic is validated, placed and written as the gateway does, under the brokers' ZooKeeper
identity (docs/zookeeper-security.md says what that identity may therefore do). Kafka's timeout_ms
is honoured by waiting, up to it, until this broker's metadata cache shows every new partition with
a leader (create) or no longer knows the topic (delete); a wait that runs out answers
REQUEST_TIMED_OUT, as Kafka does, though the topic is then still created (or deleted) later.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Callable

from kazoo.exceptions import KazooException, NoAuthError

from replog.broker.kafka import errors
from replog.common.error_codes import ErrorCode
from replog.common.topic_admin import writes
from replog.common.topic_admin.core.refusal import Refusal, Status
from replog.common.topic_admin.core.topics import CreateTopic
from replog.common.zk.client import ZkClient
from replog.common.zk.session import ZkAuthError, ZkWireError

log = logging.getLogger(__name__)

WAIT_POLL_S = 0.05
TIMEOUT_MS_MAX = 300_000   # a client's timeout_ms holds a connection's thread at most this long
_BY_STATUS = {Status.ALREADY_EXISTS: ErrorCode.TOPIC_ALREADY_EXISTS, Status.NOT_FOUND: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              Status.ABORTED: ErrorCode.REQUEST_TIMED_OUT}

Answer = tuple[int, str | None]   # (Kafka error code, message)
OK: Answer = (errors.NONE, None)


class KafkaTopicAdmin:
    def __init__(self, zk: ZkClient, metadata, rng: random.Random,
                 monotonic_s: Callable[[], float] = time.monotonic, sleep_s: Callable[[float], None] = time.sleep):
        self._zk = zk
        self._metadata = metadata
        self._rng = rng
        self._monotonic_s = monotonic_s
        self._sleep_s = sleep_s

    def create(self, spec: CreateTopic, validate_only: bool) -> Answer:
        return self._guarded(lambda: writes.create_topic(self._zk, spec, self._rng, validate_only=validate_only),
                             f"create topic '{spec.name}'")

    def delete(self, name: str) -> Answer:
        return self._guarded(lambda: writes.delete_topic(self._zk, name), f"delete topic '{name}'")

    def await_leaders(self, names: list[str], timeout_ms: int) -> set[str]:
        """The topics of `names` whose partitions still lack a leader here when `timeout_ms` has passed."""
        return self._await(names, timeout_ms, lambda name: not self._has_leaders(name))

    def await_gone(self, names: list[str], timeout_ms: int) -> set[str]:
        """The topics of `names` this broker still knows when `timeout_ms` has passed."""
        return self._await(names, timeout_ms, lambda name: self._metadata.partition_count(name) > 0)

    def _has_leaders(self, name: str) -> bool:
        answer = self._metadata.metadata_response([name])
        found = [t for t in answer.topics if t.name == name]
        return bool(found and found[0].partitions) and all(p.leader >= 0 for p in found[0].partitions)

    def _await(self, names: list[str], timeout_ms: int, pending: Callable[[str], bool]) -> set[str]:
        deadline_s = self._monotonic_s() + min(timeout_ms, TIMEOUT_MS_MAX) / 1000
        waiting = {n for n in names if pending(n)}
        while waiting and self._monotonic_s() < deadline_s:
            self._sleep_s(WAIT_POLL_S)
            waiting = {n for n in waiting if pending(n)}
        return waiting

    @staticmethod
    def _guarded(call: Callable[[], object], what: str) -> Answer:
        try:
            call()
        except Refusal as refusal:
            code = refusal.code or _BY_STATUS.get(refusal.status, ErrorCode.INVALID_REQUEST)
            return errors.kafka_code(code), refusal.message
        except (NoAuthError, ZkAuthError) as exc:
            # The brokers' ZooKeeper identity lacks the ACL: /admin/delete_topics laid out before brokers had
            # CREATE there, or a config znode left by an interrupted delete, which only the gateway may rewrite.
            log.warning("Kafka %s: ZooKeeper refused the brokers' identity: %s", what, exc)
            return errors.CLUSTER_AUTHORIZATION_FAILED, (
                f"ZooKeeper does not let the brokers {what} (docs/zookeeper-security.md); use the admin gateway")
        except (KazooException, ZkWireError, OSError) as exc:
            log.warning("Kafka %s: ZooKeeper failed: %s", what, exc)
            return errors.REQUEST_TIMED_OUT, f"ZooKeeper could not be asked ({type(exc).__name__}); retry"
        return OK
