"""Digests of a broker's replica state and metadata cache, so a new controller can
confirm what a broker holds instead of sending it all again.

What it owns: the two digest formats, which the controller computes from what it
would send and a broker from what it holds (docs/architecture.md, "Who holds the seat"):

- the *replica digest* covers the partitions a broker hosts, each as (topic,
  partition, leader, leader epoch, and the partition epoch where the broker
  leads). Equal digests mean an INIT LeaderAndIsr would delete nothing, change
  no leadership, and change no ISR the broker owns. A follower's ISR and
  partition epoch are left out: ISR changes the leader makes through
  AlterPartition reach followers only in metadata (as in Kafka), so a follower
  normally holds an older partition epoch, and nothing it does depends on it
  -- its next LeaderAndIsr carries the current one;
- the *metadata digest* covers every partition of a full UpdateMetadata, each as
  (topic, partition, leader, leader epoch, partition epoch, ISR, replicas,
  adding, removing). Equal digests mean the full update would leave the cache
  as it is.

A digest is the partition count and the sum, modulo 2**64, of one 64-bit term
per partition: independent of order, and kept current per partition by adding
the new term and subtracting the old. A term hashes a tuple of ints (a topic
goes in as its CRC-32 and length); CPython randomises the hash of strings but
not of ints and tuples, so two processes agree. The salt names the interpreter
and its hash algorithm: processes on different Pythons never agree, and fall
back to the full request. Pure: no I/O.
"""

from __future__ import annotations

import struct
import sys
import zlib
from functools import lru_cache

_MASK = (1 << 64) - 1
_FORMAT = struct.Struct(">IQQ")
_SALT = zlib.crc32(f"v1 {sys.implementation.name} {sys.version_info[:2]} {sys.hash_info.algorithm}".encode())


@lru_cache(maxsize=65536)
def _topic_key(topic: str) -> int:
    return zlib.crc32(topic.encode()) | (len(topic) << 32)


def replica_term(topic: str, partition: int, leader: int, leader_epoch: int, partition_epoch: int,
                 broker_id: int) -> int:
    """The term of one replica held by `broker_id`."""
    return hash((_topic_key(topic), partition, leader, leader_epoch, partition_epoch if leader == broker_id else -1))


def metadata_term(topic: str, partition: int, leader: int, leader_epoch: int, partition_epoch: int,
                  isr, replicas, adding, removing) -> int:
    return hash((_topic_key(topic), partition, leader, leader_epoch, partition_epoch,
                 tuple(isr), tuple(replicas), tuple(adding), tuple(removing)))


class Digest:
    """A running digest: `add` / `remove` one partition's term; `encode` for the wire."""

    __slots__ = ("count", "total")

    def __init__(self, count: int = 0, total: int = 0) -> None:
        self.count = count
        self.total = total & _MASK

    @classmethod
    def of(cls, terms) -> Digest:
        terms = list(terms)
        return cls(len(terms), sum(terms))

    def add(self, term: int) -> None:
        self.count += 1
        self.total = (self.total + term) & _MASK

    def remove(self, term: int) -> None:
        self.count -= 1
        self.total = (self.total - term) & _MASK

    def encode(self) -> bytes:
        return _FORMAT.pack(_SALT, self.count, self.total)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Digest) and (self.count, self.total) == (other.count, other.total)

    def __repr__(self) -> str:
        return f"Digest(count={self.count}, total={self.total:#018x})"


def matches(encoded: bytes, digest: Digest) -> bool:
    """True when `encoded` (from a peer) equals `digest`; a malformed or foreign digest never does."""
    return len(encoded) == _FORMAT.size and encoded == digest.encode()
