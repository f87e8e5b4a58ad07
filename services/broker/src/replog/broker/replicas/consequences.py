"""Acts on what a step on a partition changed, once its lock is released: the one place that does.

Theory of operation (core/effects.py decides the rules; docs/architecture.md, "An acks=all produce"):

Every step on a hosted partition returns `Effects` with its answer, and
`HostedPartition.run` hands them here after releasing the partition's lock. In
order: the long polls parked on the partition are woken (`Effects.wake`), the
delayed produces watching it are checked (`Effects.completes_delayed_produces`),
and a new ISR expansion goes to the ISR sender. Nothing else in the broker
completes delayed produces, wakes long polls or submits ISR proposals.

Lock order: this runs with no partition lock held, so it may take the delayed
produces' lock, which reads replicas under their own locks.

A broker has one `Consequences`, made by its ReplicaManager and connected by
bootstrap.py to the delayed produces and the ISR sender once they exist. A
partition built on its own (in a test) gets one that only wakes its long polls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replog.broker.core.effects import Effects, Wake

if TYPE_CHECKING:
    from replog.broker.control.isr_changes import IsrChangeSender
    from replog.broker.produce.delayed_produces import DelayedProduces
    from replog.broker.replicas.hosted_partition import HostedPartition


class Consequences:
    def __init__(self) -> None:
        self._delayed_produces: DelayedProduces | None = None
        self._isr_changes: IsrChangeSender | None = None

    def connect(self, *, delayed_produces: DelayedProduces, isr_changes: IsrChangeSender) -> None:
        """Wire what the effects reach; once, before the broker serves (bootstrap.py)."""
        assert self._delayed_produces is None and self._isr_changes is None, "connected twice"
        self._delayed_produces = delayed_produces
        self._isr_changes = isr_changes

    def apply(self, hosted: HostedPartition, effects: Effects) -> None:
        # Once per partition of every fetch answer and controller request: nothing is called that has
        # nothing to do (most partitions have no long poll parked on them).
        wake = effects.wake
        if wake is not Wake.NOBODY and hosted.waiters:
            hosted.wake(wake, effects.isr)
        if effects.completes_delayed_produces and self._delayed_produces is not None:
            self._delayed_produces.check(hosted.topic_partition)
        if effects.isr_proposed and self._isr_changes is not None:
            self._isr_changes.submit(hosted.topic_partition)
