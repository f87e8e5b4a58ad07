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

from collections.abc import Collection, Sequence


def next_elr(
    *, isr_before: Sequence[int], elr_before: Sequence[int], isr_after: Sequence[int], min_isr: int,
    replicas: Sequence[int],
) -> tuple[int, ...]:
    """The ELR after a write that changes the ISR from `isr_before` to `isr_after`."""
    if len(isr_after) >= min_isr:
        return ()
    candidates = {*elr_before, *isr_before}
    if not candidates:
        return ()
    return tuple(b for b in replicas if b in candidates and b not in isr_after)


def without(elr: Sequence[int], brokers: Collection[int]) -> tuple[int, ...]:
    """The ELR less `brokers` (brokers back from an unclean start)."""
    return tuple(b for b in elr if b not in brokers)
