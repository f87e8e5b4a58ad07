"""Steps: the order in which the executor carries a plan out.

Theory of operation
-------------------
A :class:`~.plan.Plan` says what changes; its ``steps`` say in which order the
executor (``adapters/plan_executor.py``) does the I/O.  The core chooses the order
(``sequencing.py``); the executor walks the steps, one small executor per kind:

* :class:`Write` -- persist ZooKeeper records in the order given, in batched
  ``multi``s that each first check the version of ``/controller_epoch``
  (KAFKA-6082), so a controller that lost its seat writes nothing.
  ``SetPartitionState`` is also conditional on ``expected_partition_epoch``; a
  failed check means another writer exists: the controller resigns or reloads,
  it never retries.
* :class:`Apply` -- ``apply(state, plan)`` (``apply.py``), the next in-memory state.
* :class:`Send` -- start one wave of broker requests: one task per broker, all
  brokers in parallel, and to one broker LeaderAndIsr, then UpdateMetadata,
  then StopReplica.  A wave sent before ``Apply`` names only brokers the old
  state knows (the executor takes their endpoints from it).
* :class:`Await` -- wait for the answers to a wave, or to every wave so far.
* :class:`Answer` -- answer the RPC that caused the event, if there is one.

Invariants (``check_order``): exactly one ``Apply`` and one ``Answer``; every
``Write`` before ``Apply`` (persist, then apply); an ``Await`` names a wave sent
before it; the last ``Send`` is followed by an ``Await`` of every wave, so the
follow-ups and the reactions to failed requests come after every broker answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .plan import LeaderAndIsrRequest, Reply, StopReplicaRequest, UpdateMetadata, ZkWrite

NEW_LEADERS = "new leaders"  # the first wave (sequencing.py)
REQUESTS = "requests"  # the plan's requests, sent once the state is applied


@dataclass(frozen=True, slots=True)
class Write:
    """Persist these ZooKeeper records, in this order."""

    writes: tuple[ZkWrite, ...]


@dataclass(frozen=True, slots=True)
class Apply:
    """Compute the next in-memory state from the plan (all its writes and state updates)."""


@dataclass(frozen=True, slots=True)
class Send:
    """Start sending one wave of requests; ``Await`` names it by ``wave``.

    ``omit_delivered_by``: a broker that answered that earlier wave is not sent
    again the decisions its UpdateMetadata carried (``sequencing.without_delivered``).
    """

    wave: str
    leader_and_isr: tuple[LeaderAndIsrRequest, ...] = ()
    update_metadata: tuple[UpdateMetadata, ...] = ()
    stop_replica: tuple[StopReplicaRequest, ...] = ()
    omit_delivered_by: str | None = None

    def broker_ids(self) -> frozenset[int]:
        """Every broker this wave sends to."""
        return frozenset((*(r.broker_id for r in self.leader_and_isr),
                          *(b for u in self.update_metadata for b in u.broker_ids),
                          *(r.broker_id for r in self.stop_replica)))


@dataclass(frozen=True, slots=True)
class Await:
    """Wait for answers.

    ``wave``: that wave's, or every wave's sent so far when ``None``.
    ``brokers``: only these brokers' answers, or all when ``None``.
    ``bound_s``: wait at most this long, or when ``None`` until each request is
    answered or its own deadline passes.
    """

    wave: str | None = None
    brokers: frozenset[int] | None = None
    bound_s: float | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer the RPC that caused the event with ``reply`` (nothing to do without a caller)."""

    reply: Reply | None = None


Step = Write | Apply | Send | Await | Answer


def check_order(steps: tuple[Step, ...]) -> None:
    """Assert the invariants of the module docstring; a violation is a controller bug."""
    kinds = [type(step) for step in steps]
    assert kinds.count(Apply) == 1 and kinds.count(Answer) == 1, f"one Apply and one Answer: {kinds}"
    applied = kinds.index(Apply)
    assert Write not in kinds[applied:], "a Write after Apply would apply what is not yet persisted"
    sent: set[str] = set()
    awaited_all = True
    for step in steps:
        if type(step) is Send:
            assert step.wave not in sent, f"wave {step.wave!r} sent twice"
            assert step.omit_delivered_by is None or step.omit_delivered_by in sent
            sent.add(step.wave)
            awaited_all = False
        elif type(step) is Await:
            assert step.wave is None or step.wave in sent, f"Await of a wave not sent: {step.wave!r}"
            if step.wave is None and step.brokers is None and step.bound_s is None:
                awaited_all = True
    assert awaited_all, "the steps end before every wave was answered"
