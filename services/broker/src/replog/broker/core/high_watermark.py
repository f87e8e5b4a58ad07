"""The leader's high watermark (HW) as pure functions, like etcd raft's `CommittedIndex`.

Theory of operation (DESIGN.md §4 "High watermark"; seed v2 "Writes"; KIP-101,
KIP-207, KIP-497):

1. Candidate. `high_watermark_candidate(isr, log_end_offsets)` is the minimum
   log end offset (LEO) over the ISR, the leader's own LEO included. A member
   whose LEO is not known yet (no fetch in this leader epoch) counts as -1, so
   the candidate cannot pass a replica the leader has not heard from. The ISR
   given is the *maximal* ISR (see leader.py): committed ISR plus a pending
   expansion, or the old, larger ISR while a shrink is pending.

2. Advance. `next_high_watermark(current, candidate, epoch_start_offset)`
   moves the HW only forward (monotonic) and only to a candidate at or past the
   start offset of the leader's current epoch (its LEO when it became leader).

Why the epoch rule: a new leader inherits its HW from its follower days, which
may be lower than the HW its predecessor already published. Every HW the
predecessor published is <= the new leader's LEO at election (a clean leader
was in the ISR the HW was computed over), i.e. <= `epoch_start_offset`. So by
refusing to publish values below `epoch_start_offset`, every *advance* a leader
publishes is >= every HW published in earlier epochs: the HW seen by clients
never moves backwards across a leader change (the KIP-207 concern), and the
new leader never "commits" a tail it has not confirmed in its own epoch.
Until then the leader keeps serving its inherited HW (a safe lower bound).

Safety of the candidate itself rests on the leader counting only follower
LEOs from fetches whose (fetch_offset, last_fetched_epoch) matched its own
epoch cache (divergent fetches update nothing; KIP-101/KIP-320), so a
follower's LEO always names a prefix of the leader's log.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from replog.broker.core.log_view import NO_OFFSET


def high_watermark_candidate(isr: Iterable[int], log_end_offsets: Mapping[int, int]) -> int:
    """Minimum LEO over `isr`; an unknown LEO counts as -1."""
    members = tuple(isr)
    assert members, "the ISR always holds at least the leader"
    return min(log_end_offsets.get(replica_id, NO_OFFSET) for replica_id in members)


def next_high_watermark(current: int, candidate: int, epoch_start_offset: int) -> int:
    """The HW after considering `candidate`: forward only, and only at or past the epoch start."""
    if candidate > current and candidate >= epoch_start_offset:
        return candidate
    return current
