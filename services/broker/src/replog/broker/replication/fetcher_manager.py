"""The broker's replica fetchers: `num_replica_fetchers` per leader broker it follows partitions on.

A partition is fetched by exactly one fetcher: of its current leader's fetchers,
the one its name picks (`fetcher_index`, the same on every broker and at every
start). `add` moves it there (removing it from a previous leader's fetcher),
`remove` stops fetching it. A fetcher thread is created the first time it gets
a partition and then kept; an idle one just waits on its condition.

Why more than one per leader (Kafka's `num.replica.fetchers`): a fetcher is a
strict relay of one request in flight, so with one per leader the bulk steps of
a failover's join run one after the other, each broker waiting for the other;
two fetchers overlap them (docs/perf/replica-fetchers.md). The default stays
one, the design's one request per leader.
"""

from __future__ import annotations

import threading
import zlib
from typing import Callable, Iterable, Sequence

from opentelemetry import context as otel_context

from replog.broker.replication.fetcher import ReplicaFetcher
from replog.common.core.partitions import TopicPartition


class FetcherManager:
    def __init__(self, make_fetcher: Callable[[int, int], ReplicaFetcher], fetchers_per_leader: int = 1) -> None:
        """`make_fetcher(leader_id, fetcher_id)` builds an unstarted fetcher."""
        self._make_fetcher = make_fetcher
        self._per_leader = fetchers_per_leader
        self._lock = threading.Lock()
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._fetcher_of: dict[TopicPartition, tuple[int, int]] = {}  # (leader id, fetcher id)
        self._stopped = False

    def add(
        self, leader_id: int, partitions: Sequence[tuple[TopicPartition, int]],
        trace_context: otel_context.Context | None,
    ) -> None:
        """Fetch each (partition, leader epoch) from `leader_id`, moving it off a previous leader's fetcher."""
        with self._lock:
            if self._stopped:
                return
            moved: dict[tuple[int, int], list[TopicPartition]] = {}
            split: dict[tuple[int, int], list[tuple[TopicPartition, int]]] = {}
            for entry in partitions:
                topic_partition, _ = entry
                key = (leader_id, fetcher_index(topic_partition, self._per_leader))
                previous = self._fetcher_of.get(topic_partition)
                if previous is not None and previous != key:
                    moved.setdefault(previous, []).append(topic_partition)
                self._fetcher_of[topic_partition] = key
                split.setdefault(key, []).append(entry)
            for previous, topic_partitions in moved.items():
                self._fetchers[previous].remove(topic_partitions)
            for key, entries in split.items():
                fetcher = self._fetchers.get(key)
                if fetcher is None:
                    fetcher = self._fetchers[key] = self._make_fetcher(*key)
                    fetcher.start()
                fetcher.add(entries, trace_context)

    def remove(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions (one call per batch: see ReplicaFetcher.remove)."""
        with self._lock:
            by_fetcher: dict[tuple[int, int], list[TopicPartition]] = {}
            for topic_partition in partitions:
                key = self._fetcher_of.pop(topic_partition, None)
                if key is not None:
                    by_fetcher.setdefault(key, []).append(topic_partition)
            for key, topic_partitions in by_fetcher.items():
                self._fetchers[key].remove(topic_partitions)

    def position_changed(self, topic_partition: TopicPartition) -> None:
        """The replica's log was cut outside its fetcher: fetch from its new end (ReplicaFetcher.position_changed)."""
        with self._lock:
            key = self._fetcher_of.get(topic_partition)
            fetcher = None if key is None else self._fetchers.get(key)
        if fetcher is not None:
            fetcher.position_changed(topic_partition)

    def fetched_partitions(self) -> dict[TopicPartition, int]:
        with self._lock:
            return {tp: key[0] for tp, key in self._fetcher_of.items()}

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            fetchers = list(self._fetchers.values())
        for fetcher in fetchers:
            fetcher.stop()


def fetcher_index(topic_partition: TopicPartition, fetchers_per_leader: int) -> int:
    """Which of a leader's fetchers fetches this partition: stable across processes (unlike `hash`
    of a str), and consecutive partitions of a topic alternate."""
    return (zlib.crc32(topic_partition.topic.encode()) + topic_partition.partition) % fetchers_per_leader
