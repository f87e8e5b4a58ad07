"""The producer's default partitioner against Kafka's: its published murmur2 vectors and sticky null keys."""

import random

import pytest

from replog.client.partitioner import StickyPartitioner, murmur2, partition_for_key

# Kafka's own test vectors (clients/src/test/.../common/utils/UtilsTest.java, testMurmur2).
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_kafka(key, expected):
    assert murmur2(key) == expected


def test_partition_is_the_positive_hash_modulo_the_count():
    # toPositive(-790332482) = 1357151166; 1357151166 % 6 = 0, % 50 = 16
    assert partition_for_key(b"foobar", 50) == 16
    assert partition_for_key(b"foobar", 6) == 1357151166 % 6
    assert all(0 <= partition_for_key(key, 7) < 7 for key, _ in KAFKA_VECTORS)


def test_sticky_partition_holds_until_it_needs_a_new_batch_then_moves_elsewhere():
    sticky = StickyPartitioner(random.Random(7))
    first = sticky.partition("t", 6)
    assert {sticky.partition("t", 6) for _ in range(100)} == {first}
    assert sticky.next_partition("t", (first + 1) % 6, 6) == first  # not the sticky one (a raced caller): stays
    seen = set()
    for _ in range(200):
        current = sticky.partition("t", 6)
        assert sticky.next_partition("t", current, 6) != current
        seen.add(current)
    assert seen == set(range(6))


def test_sticky_with_one_partition_stays():
    sticky = StickyPartitioner(random.Random(1))
    assert sticky.partition("t", 1) == 0
    assert sticky.next_partition("t", 0, 1) == 0
