"""The leader's high watermark (HW) as pure functions, like etcd raft's `CommittedIndex`.

Theory of operation (docs/architecture.md, "High watermark and ISR"; seed v2 "Writes"; KIP-101,
KIP-207, KIP-497):

1. Candidate. `high_watermark_candidate(isr, log_end_offsets)` is the minimum
   log end offset (LEO) over the ISR, the leader's own LEO included. A member
   whose LEO is not known yet (no fetch in this leader epoch) counts as -1, so
   the candidate cannot pass a replica the leader has not heard from. The ISR
   given is the *maximal* ISR (see core/leader.py): committed ISR plus a pending
   expansion, or the old, larger ISR while a shrink is pending.

2. Advance. `next_high_watermark(current, candidate, epoch_start_offset)`
   moves the HW only forward (monotonic) and only to a candidate at or past the
   start offset of the leader's current epoch (its LEO when it became leader).

3. Strict min ISR (KIP-966). `held_below_min_isr(isr_size, min_insync_replicas,
   replica_count)`: while the *committed* ISR has fewer members than
   min.insync.replicas (capped at the replica count, so a topic asking for more
   replicas than it has is not frozen), the HW does not move at all. Every
   record below the HW is then on at least min.insync.replicas replicas, which
   is what the controller's eligible leader replicas (ELR) vouch for: a replica
   the ISR dropped below that size holds every committed record, acks=1 ones
   included, not only the acks=all ones. The price, as in Kafka: records written
   with acks=0/1 while the ISR is that small stay invisible to consumers until
   it grows back (or min.insync.replicas is lowered).

What each rule is for (checked by mutation against the seeded simulation in
tests/scenario/broker):

- Load-bearing: the candidate counts only follower LEOs from fetches whose
  (fetch_offset, last_fetched_epoch) matched the leader's epoch cache
  (divergent fetches update nothing; KIP-101/KIP-320), so a follower's LEO
  always names a prefix of the leader's log; and the ISR used is the maximal
  ISR, a superset of any ISR the controller may hold. Removing either lets
  the simulation lose committed records within a few seeds.
- Conservative, not load-bearing: the epoch-start rule (Raft's "commit only
  through your own term", as the KIP-101/KIP-207 discussion suggests). With
  clean elections every ISR member already holds every record below any HW
  published earlier, so the candidate cannot fall below it anyway; the
  simulation's invariants (no committed record lost, published HW never
  moves back) hold with the rule removed. It is kept because it makes the
  first HW a new leader publishes confirm its whole pre-epoch log is on the
  ISR, and it gives `LeaderReplica.high_watermark_settled` its meaning: from
  then on the HW is >= every HW published in earlier epochs.
- Not solved by either: right after an election the leader serves its
  inherited HW, which may be below the predecessor's last one (KIP-207).
  Adapters that must never show an HW going back (ListOffsets LATEST) should
  answer a retriable error while `high_watermark_settled` is False.
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

from replog.broker.core.log_view import NO_OFFSET


class HighWatermarkUpdate(NamedTuple):
    previous: int
    current: int

    @property
    def advanced(self) -> bool:
        return self.current > self.previous


def high_watermark_candidate(isr: Iterable[int], log_end_offsets: Mapping[int, int]) -> int:
    """Minimum LEO over `isr`; an unknown LEO counts as -1."""
    members = tuple(isr)
    assert members, "the ISR always holds at least the leader"
    return min(log_end_offsets.get(replica_id, NO_OFFSET) for replica_id in members)


def held_below_min_isr(isr_size: int, min_insync_replicas: int, replica_count: int) -> bool:
    """The committed ISR is below min.insync.replicas (capped at the replica count): the HW stays."""
    return isr_size < min(min_insync_replicas, replica_count)


def leader_high_watermark(current: int, maximal_isr: Iterable[int], log_end_offsets: Mapping[int, int],
                          epoch_start_offset: int) -> int:
    """The leader's HW once one of its inputs changed, by rules 1 and 2 (rule 3 is the caller's check)."""
    return next_high_watermark(current, high_watermark_candidate(maximal_isr, log_end_offsets), epoch_start_offset)


def next_high_watermark(current: int, candidate: int, epoch_start_offset: int) -> int:
    """The HW after considering `candidate`: forward only, and only at or past the epoch start."""
    if candidate > current and candidate >= epoch_start_offset:
        return candidate
    return current
