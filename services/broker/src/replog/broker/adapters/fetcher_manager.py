"""The broker's replica fetchers: one per leader broker it follows partitions on.

A partition is fetched by exactly one fetcher, the one for its current leader;
`add` moves it there (removing it from a previous leader's fetcher), `remove`
stops fetching it. A fetcher thread is created the first time a leader is
followed and then kept (at most one per broker in the cluster); an idle one
just waits on its condition.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterable, Sequence

from opentelemetry import context as otel_context

from replog.broker.adapters.fetcher import ReplicaFetcher
from replog.broker.core.topic_partition import TopicPartition


class FetcherManager:
    def __init__(self, make_fetcher: Callable[[int], ReplicaFetcher]) -> None:
        self._make_fetcher = make_fetcher
        self._lock = threading.Lock()
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._leader_of: dict[TopicPartition, int] = {}
        self._stopped = False

    def add(
        self, leader_id: int, partitions: Sequence[tuple[TopicPartition, int]],
        trace_context: otel_context.Context | None,
    ) -> None:
        """Fetch each (partition, leader epoch) from `leader_id`, moving it off a previous leader's fetcher."""
        with self._lock:
            if self._stopped:
                return
            moved: dict[int, list[TopicPartition]] = {}
            for topic_partition, _ in partitions:
                previous = self._leader_of.get(topic_partition)
                if previous is not None and previous != leader_id:
                    moved.setdefault(previous, []).append(topic_partition)
                self._leader_of[topic_partition] = leader_id
            for previous, topic_partitions in moved.items():
                self._fetchers[previous].remove(topic_partitions)
            fetcher = self._fetchers.get(leader_id)
            if fetcher is None:
                fetcher = self._fetchers[leader_id] = self._make_fetcher(leader_id)
                fetcher.start()
            fetcher.add(partitions, trace_context)

    def remove(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions (one call per batch: see ReplicaFetcher.remove)."""
        with self._lock:
            by_leader: dict[int, list[TopicPartition]] = {}
            for topic_partition in partitions:
                leader_id = self._leader_of.pop(topic_partition, None)
                if leader_id is not None:
                    by_leader.setdefault(leader_id, []).append(topic_partition)
            for leader_id, topic_partitions in by_leader.items():
                self._fetchers[leader_id].remove(topic_partitions)

    def fetched_partitions(self) -> dict[TopicPartition, int]:
        with self._lock:
            return dict(self._leader_of)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            fetchers = list(self._fetchers.values())
        for fetcher in fetchers:
            fetcher.stop()
