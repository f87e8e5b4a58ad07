"""Eligible leader replicas (ELR): who may still lead cleanly once the ISR has died (KIP-966).

Theory of operation
-------------------
docs/durability.md, "Eligible leader replicas".  A partition's ISR never holds fewer members than
``min.insync.replicas`` while an acks=all write is acknowledged, so when the ISR shrinks below that
size, every replica it drops held each acknowledged record: the HW could only have passed them while
they were counted.  Kafka used to forget such replicas; once the last ISR member died too, only that
member could come back cleanly.  The ELR keeps them, so any of them may lead after the ISR is gone.

The rules, all in :func:`next_elr` (the builder applies it to every partition-state write, so no
handler can forget it):

* while the new ISR has at least ``min.insync.replicas`` members the ELR is empty: the HW can move on
  without the replicas outside it, so they may miss committed records;
* below that size, the ELR gains every replica the write drops from the ISR, and keeps the members it
  had; the ISR and the ELR never share a member (a replica back in the ISR leaves the ELR);
* only assigned replicas, in assignment order.

``min.insync.replicas`` is the topic's own, or, for a topic without one, the lowest default of the live
brokers (their registrations' ``min_insync_replicas``; ``PlanBuilder.min_isr_of``).  A topic's leader
enforces its broker's default, and taking more than that would be unsafe: a replica the ISR dropped while
the leader still acknowledged acks=all writes without it would join the ELR and could be elected cleanly
without them.  The lowest is never above the leader's (a leader is live), and taking less only keeps
fewer replicas eligible; with one value on every broker it is exact.  With no live broker at all nobody
can say, but no leader is live either to commit anything: the ELR then gains no member and loses only
those back in the ISR (``min_isr=None``).  When brokers coming or going change that value, no partition
state is rewritten: the rules apply at each partition's next write.  Until then the ELR written holds: it
is non-empty only while the ISR is smaller than a value no greater than its leader's default, and neither
the leader nor its default (a broker's config changes only with a new registration) changes without a write.

And two that the handlers apply, because only they know why:

* a broker that registers after an unclean start (no clean-shutdown marker), or says it lost
  committed records, leaves every ELR (:func:`without`): its log may have lost its tail;
* an unclean election (a leader from outside ISR and ELR) empties the ELR: the records it vouched
  for are given up.

replog keeps one ISR member when every member is dead (leadership.py), where KIP-966 empties the ISR
into the ELR; that kept member plays the part of KIP-966's "last known leader".  The election order
is in election.py.  The gap: replog's HW still advances while the ISR is below min.insync.replicas
(KIP-966's "strict min ISR" is not done), so a record acknowledged with acks=1 (or answered
NOT_ENOUGH_REPLICAS_AFTER_APPEND) in that window may be missing on an ELR member; acks=all records
acknowledged without error are never.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from .model import BrokerInfo


def next_elr(
    *, isr_before: Sequence[int], elr_before: Sequence[int], isr_after: Sequence[int], min_isr: int | None,
    replicas: Sequence[int],
) -> tuple[int, ...]:
    """The ELR after a write that changes the ISR from `isr_before` to `isr_after`; `min_isr` None: not known
    (no live broker to say)."""
    if min_isr is None:
        return tuple(b for b in replicas if b in elr_before and b not in isr_after)
    if len(isr_after) >= min_isr:
        return ()
    candidates = {*elr_before, *isr_before}
    if not candidates:
        return ()
    return tuple(b for b in replicas if b in candidates and b not in isr_after)


def lowest_default(live: Mapping[int, BrokerInfo]) -> int | None:
    """The min.insync.replicas taken for a topic without its own (see above); None with no live broker."""
    return min((info.min_insync_replicas_default for info in live.values()), default=None)


def without(elr: Sequence[int], brokers: Collection[int]) -> tuple[int, ...]:
    """The ELR less `brokers` (brokers back from an unclean start)."""
    return tuple(b for b in elr if b not in brokers)
