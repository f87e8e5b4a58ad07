"""The replica and metadata digests a new controller confirms brokers' state with."""

from __future__ import annotations

from replog.common import state_digest as sd


BROKER = 1


def replicas(states):
    """states: (topic, partition) -> (leader epoch, partition epoch); broker 1 leads every partition."""
    return sd.Digest.of(sd.replica_term(t, p, BROKER, le, pe, BROKER) for (t, p), (le, pe) in states.items())


STATES = {("orders", p): (p % 3, p) for p in range(50)} | {("audit", 0): (4, 9)}


def test_equal_states_agree_in_any_order():
    reordered = dict(reversed(list(STATES.items())))
    assert replicas(STATES) == replicas(reordered)
    assert sd.matches(replicas(STATES).encode(), replicas(reordered))


def test_one_epoch_a_missing_or_an_extra_partition_disagrees():
    digest = replicas(STATES)
    assert replicas(STATES | {("orders", 7): (1, 8)}) != digest  # partition epoch 7 -> 8
    assert replicas(STATES | {("orders", 7): (2, 7)}) != digest  # leader epoch 1 -> 2
    assert replicas({k: v for k, v in STATES.items() if k != ("audit", 0)}) != digest
    assert replicas(STATES | {("audit", 1): (0, 0)}) != digest
    assert replicas(STATES | {("orders2", 0): STATES[("orders", 0)]}) != digest  # same numbers, other topic


def test_a_running_digest_follows_changes_one_partition_at_a_time():
    running = replicas(STATES)
    running.remove(sd.replica_term("orders", 7, BROKER, 1, 7, BROKER))
    running.add(sd.replica_term("orders", 7, BROKER, 1, 8, BROKER))
    assert running == replicas(STATES | {("orders", 7): (1, 8)})


def test_a_followers_partition_epoch_does_not_count_but_its_leader_does():
    """Followers learn ISR changes from metadata only, so they hold older partition epochs."""
    assert sd.replica_term("t", 0, 2, 5, 7, BROKER) == sd.replica_term("t", 0, 2, 5, 9, BROKER)
    assert sd.replica_term("t", 0, 2, 5, 7, BROKER) != sd.replica_term("t", 0, 3, 5, 7, BROKER)
    assert sd.replica_term("t", 0, 2, 5, 7, BROKER) != sd.replica_term("t", 0, 2, 6, 7, BROKER)
    assert sd.replica_term("t", 0, BROKER, 5, 7, BROKER) != sd.replica_term("t", 0, BROKER, 5, 9, BROKER)


def test_metadata_terms_cover_isr_and_replica_lists():
    base = sd.metadata_term("t", 0, 1, 3, 5, [1, 2], [1, 2, 3], [], [])
    assert base == sd.metadata_term("t", 0, 1, 3, 5, (1, 2), (1, 2, 3), (), ())  # lists or tuples alike
    assert base != sd.metadata_term("t", 0, 1, 3, 5, [1, 2, 3], [1, 2, 3], [], [])
    assert base != sd.metadata_term("t", 0, 1, 3, 5, [1, 2], [1, 2, 3], [4], [])


def test_malformed_or_empty_digests_never_match():
    digest = replicas(STATES)
    assert not sd.matches(b"", digest)
    assert not sd.matches(digest.encode()[:-1], digest)
    assert not sd.matches(b"\x00" * len(digest.encode()), digest)

