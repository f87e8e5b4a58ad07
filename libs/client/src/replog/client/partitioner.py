"""Which partition a record without an explicit partition goes to: Kafka's default partitioner.

A keyed record goes to `toPositive(murmur2(key)) % partition_count`, the hash Kafka's Java
client (and librdkafka's `murmur2_random`) uses, so keyed data written by replog lands where a
Kafka user expects it. `murmur2` is the 32-bit MurmurHash2 variant of Kafka's `Utils.murmur2`
(seed 0x9747b28c), returned as the signed int Java gives.

A record without a key goes to the topic's *sticky* partition (KIP-480): every null-key record
joins the same partition's open batch; when that partition has none (its batch left, full or at
the end of its linger), the topic sticks to another partition, chosen at random among the others,
and the record opens a batch there. Batches fill, so one thread sending small records
makes few large requests rather than one small request per partition per linger.

Pure: the random source comes in from outside.
"""

from __future__ import annotations

import random

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of `data`, as a signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= data[whole + 2] << 16
        if tail >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partition_count: int) -> int:
    """The partition Kafka's default partitioner picks for `key`."""
    return (murmur2(key) & 0x7FFFFFFF) % partition_count


class StickyPartitioner:
    """Each topic's partition for null-key records, until `batch_sealed` moves it on."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._current: dict[str, int] = {}

    def partition(self, topic: str, partition_count: int) -> int:
        current = self._current.get(topic)
        if current is None or current >= partition_count:
            current = self._current[topic] = self._rng.randrange(partition_count)
        return current

    def next_partition(self, topic: str, partition: int, partition_count: int) -> int:
        """The topic's sticky partition had no open batch (its last one left, full or lingered): a null-key
        record needs a new batch, so stick to another partition, at random, from now on (Kafka's
        `onNewBatch`)."""
        if self._current.get(topic) == partition and partition_count > 1:
            other = self._rng.randrange(partition_count - 1)
            self._current[topic] = other + 1 if other >= partition else other
        return self.partition(topic, partition_count)
