"""Leader elections: one pure function per kind (Kafka's PartitionLeaderElectionAlgorithms).

Theory of operation
-------------------
docs/architecture.md, "A broker failure".  Each function looks at a partition's replicas in
*assignment order* (so the preferred replica wins when it can) and returns the
new leader's broker id, or ``None`` when no replica qualifies; the caller then
keeps or records ``NO_LEADER``.  ``eligible`` is the set of brokers that may
lead: alive and not in controlled shutdown (a stopping broker must not be handed
new leaderships).  Nothing here knows about epochs or ZooKeeper.

* offline:   in this order (KIP-966's, elr.py):
             1. an eligible ISR member that has not reported lost committed records
                and did not start uncleanly (clean);
             2. an eligible ELR member that has not reported lost records (clean,
                ``from_elr``: the ISR becomes that leader alone); a broker back from
                an unclean start left every ELR before any election (brokers.py);
             3. an eligible ISR member that started uncleanly but reported no loss,
                cleanly: KIP-966's "last known leader";
             4. only when the topic allows unclean elections (or an operator asks for
                one): an eligible ISR member that lost committed records (``lost``: its
                registration says an unclean shutdown took records it has not fetched
                again) -- flagged unclean and ``lossy``, since the partition comes back
                without them -- else the first eligible replica at all, flagged
                unclean, because it may lack committed records. Otherwise the
                partition stays offline: no replica holds every committed record.
* reassign:  first replica of the *target* list that is eligible and in the ISR.
* preferred: the preferred (first) replica, if eligible and in the ISR.
* controlled shutdown: first replica that is in the ISR, alive, and not shutting down.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple


class OfflineElection(NamedTuple):
    """Result of the offline election: ``leader`` is ``None`` when nobody qualifies."""

    leader: int | None
    unclean: bool
    lossy: bool = False  # the leader is an ISR member that lost committed records: they are gone
    from_elr: bool = False  # the leader is an ELR member: it holds every committed record


def offline_partition_leader(
    assignment: Sequence[int], isr: Collection[int], eligible: Collection[int], unclean_allowed: bool,
    lost: Collection[int] = (), elr: Collection[int] = (), unclean_started: Collection[int] = (),
) -> OfflineElection:
    """Leader for a partition whose leader died (or that never had one); `lost`: brokers that lost
    committed records of it in an unclean shutdown and have not caught up since; `unclean_started`:
    brokers whose registration says they started without the clean-shutdown marker."""
    for broker in assignment:
        if broker in eligible and broker in isr and broker not in lost and broker not in unclean_started:
            return OfflineElection(broker, False)
    for broker in assignment:
        if broker in eligible and broker in elr and broker not in lost:
            return OfflineElection(broker, False, from_elr=True)
    for broker in assignment:
        if broker in eligible and broker in isr and broker not in lost:
            return OfflineElection(broker, False)
    if unclean_allowed:
        for broker in assignment:
            if broker in eligible and broker in isr:
                return OfflineElection(broker, True, lossy=True)
        for broker in assignment:
            if broker in eligible:
                return OfflineElection(broker, True)
    return OfflineElection(None, False)


def reassignment_leader(
    target: Sequence[int], isr: Collection[int], eligible: Collection[int]
) -> int | None:
    """Leader among the target replicas when a reassignment completes."""
    return next((b for b in target if b in eligible and b in isr), None)


def preferred_leader(
    assignment: Sequence[int], isr: Collection[int], eligible: Collection[int]
) -> int | None:
    """The preferred replica, if it can lead now."""
    preferred = assignment[0] if assignment else None
    return preferred if preferred in eligible and preferred in isr else None


def controlled_shutdown_leader(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int],
    shutting_down: Collection[int],
) -> int | None:
    """Leader replacing one on a broker that is shutting down."""
    return next(
        (b for b in assignment if b in isr and b in live and b not in shutting_down), None
    )
