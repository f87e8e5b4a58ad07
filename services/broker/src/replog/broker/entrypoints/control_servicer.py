"""gRPC BrokerControlService: the controller's LeaderAndIsr, StopReplica and UpdateMetadata.

Thin: fence the sender, convert protobuf to domain values, call
ReplicaStateChanges / the metadata cache, convert back. Fencing, for every
request: the controller epoch is judged by the controller fence
(control/controller_fence.py, rule in core/controller_epoch.py): lower than the
fence is a zombie controller, higher is obeyed only when ZooKeeper's
/controller_epoch confirms it (STALE_CONTROLLER_EPOCH otherwise, nothing
applied, the fence unchanged; UNAVAILABLE when ZooKeeper cannot be asked, which
the controller retries). A broker epoch lower than this broker's registration is
addressed to an earlier incarnation, and so is one without a broker epoch (0)
once this broker has registered (STALE_BROKER_EPOCH). A higher broker epoch
is accepted: it can only be a registration this process made and has not
recorded yet (czxids increase).

Every refusal, of the whole request or of some of its partitions, goes to the
refusal log with the caller's peer address (rate-limited, refusal_log.py).
"""

from __future__ import annotations

from typing import Callable

import grpc
from opentelemetry import context as otel_context

from replog.broker.control.controller_fence import ControllerFence, EpochUnconfirmed
from replog.broker.control.state_changes import PartitionResult, ReplicaStateChanges, StopRequest
from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.maintenance.checkpointer import ControlBursts
from replog.common.core.partitions import TopicPartition
from replog.common.refusal_log import RefusalLog
from replog.v1 import broker_control_pb2, broker_control_pb2_grpc, common_pb2

REFUSED_EXAMPLES = 3  # partitions named in a refusal line; the line counts the rest


class BrokerControlServicer(broker_control_pb2_grpc.BrokerControlServiceServicer):
    def __init__(
        self, *, state_changes: ReplicaStateChanges, metadata: MetadataCache, broker_epoch_of: Callable[[], int],
        fence: ControllerFence, refusals: RefusalLog, bursts: ControlBursts | None = None,
    ) -> None:
        self._bursts = bursts
        self._state_changes = state_changes
        self._metadata = metadata
        self._broker_epoch_of = broker_epoch_of
        self._fence = fence
        self._refusals = refusals

    def _refuse(self, method: str, controller_epoch: int, broker_epoch: int | None, context) -> tuple[int, str] | None:
        """Why the request is refused as a whole, or None; `broker_epoch` is None for a request without one."""
        if self._bursts is not None:
            self._bursts.note()  # the checkpointer steps aside while the controller's requests keep coming
        try:
            stale = self._fence.admit(controller_epoch)
        except EpochUnconfirmed as exc:
            message = f"cannot confirm controller epoch {controller_epoch}: {exc}; try again"
            self._refusals.refused(context.peer(), method, "UNAVAILABLE", message)
            context.abort(grpc.StatusCode.UNAVAILABLE, message)
        refused = None
        if stale is not None:
            refused = stale.code, stale.reason
        else:
            ours = self._broker_epoch_of()
            if broker_epoch is not None and broker_epoch < ours:  # 0, "not given", included
                refused = ErrorCode.STALE_BROKER_EPOCH, f"broker epoch {broker_epoch} < this registration's {ours}"
        if refused is not None:
            self._refusals.refused(context.peer(), method, ErrorCode(refused[0]).name, refused[1])
        return refused

    def _invalid(self, method: str, message: str, context) -> tuple[int, str]:
        self._refusals.refused(context.peer(), method, ErrorCode.INVALID_REQUEST.name, message)
        return ErrorCode.INVALID_REQUEST, message

    def _partition_errors(self, method: str, results: list[PartitionResult], context) -> list:
        """The answer's list of partitions not applied; each error code among them is one refusal line
        (rate-limited like any other). One pass over the results: a failover's request has thousands."""
        refused = [r for r in results if r.error_code != ErrorCode.NONE]
        if not refused:
            return []
        by_code: dict[int, list[PartitionResult]] = {}
        for result in refused:
            by_code.setdefault(result.error_code, []).append(result)
        for code, of_code in by_code.items():
            examples = "; ".join(f"{r.topic_partition}: {r.message}" for r in of_code[:REFUSED_EXAMPLES])
            more = f"; and {len(of_code) - REFUSED_EXAMPLES} more" if len(of_code) > REFUSED_EXAMPLES else ""
            self._refusals.refused(context.peer(), method, ErrorCode(code).name,
                                   f"{len(of_code)} partition(s): {examples}{more}")
        return _errors(refused)

    def LeaderAndIsr(self, request, context):
        refused = self._refuse("LeaderAndIsr", request.controller_epoch, request.broker_epoch, context)
        if refused is not None:
            return broker_control_pb2.LeaderAndIsrResponse(error_code=refused[0], error_message=refused[1])
        if request.replica_state_digest:
            return self._confirm_replicas(request, context)
        malformed = [ps for ps in request.partitions if not ps.topic or ps.partition < 0]
        if malformed:
            code, message = self._invalid(
                "LeaderAndIsr", f"bad partition {malformed[0].topic!r}-{malformed[0].partition}", context)
            return broker_control_pb2.LeaderAndIsrResponse(error_code=code, error_message=message)
        # Positional, and no tuple built for an empty `adding`: thousands per request after a failover.
        decisions = [
            LeaderAndIsrDecision(TopicPartition(ps.topic, ps.partition), ps.leader, ps.leader_epoch, tuple(ps.isr),
                                 ps.partition_epoch, tuple(ps.replicas), ps.is_new,
                                 tuple(ps.adding_replicas) if ps.adding_replicas else ())
            for ps in request.partitions
        ]
        self._metadata.remember_leader_endpoints(request.leaders)
        # The call's SERVER span is current (bootstrap wraps this servicer: replog.common.rpc_spans), a child of
        # the controller's call: the replicas' work joins the controller's trace under it.
        results = self._state_changes.leader_and_isr(decisions, init=request.init, parent=otel_context.get_current())
        return broker_control_pb2.LeaderAndIsrResponse(partitions=self._partition_errors("LeaderAndIsr", results,
                                                                                         context))

    def _confirm_replicas(self, request, context) -> broker_control_pb2.LeaderAndIsrResponse:
        if request.init or request.partitions:
            code, message = self._invalid(
                "LeaderAndIsr", "replica_state_digest confirms a state: send it without init and without partitions",
                context)
            return broker_control_pb2.LeaderAndIsrResponse(error_code=code, error_message=message)
        self._metadata.remember_leader_endpoints(request.leaders)
        matched = self._state_changes.confirm_replicas(request.replica_state_digest)
        return broker_control_pb2.LeaderAndIsrResponse(state_digest_matched=matched)

    def StopReplica(self, request, context):
        refused = self._refuse("StopReplica", request.controller_epoch, request.broker_epoch, context)
        if refused is not None:
            return broker_control_pb2.StopReplicaResponse(error_code=refused[0], error_message=refused[1])
        requests = [
            StopRequest(TopicPartition(p.topic, p.partition), p.leader_epoch, p.delete) for p in request.partitions
        ]
        results = self._state_changes.stop_replicas(requests)
        return broker_control_pb2.StopReplicaResponse(partitions=self._partition_errors("StopReplica", results,
                                                                                       context))

    def UpdateMetadata(self, request, context):
        refused = self._refuse("UpdateMetadata", request.controller_epoch, None, context)
        if refused is not None:
            return broker_control_pb2.UpdateMetadataResponse(error_code=refused[0], error_message=refused[1])
        if request.metadata_digest:
            if request.full or request.partitions or request.deleted_topics:
                code, message = self._invalid(
                    "UpdateMetadata", "metadata_digest confirms a state: send it without full, partitions or "
                                      "deleted topics", context)
                return broker_control_pb2.UpdateMetadataResponse(error_code=code, error_message=message)
            return broker_control_pb2.UpdateMetadataResponse(state_digest_matched=self._metadata.confirm(request))
        self._metadata.update(request)
        return broker_control_pb2.UpdateMetadataResponse()


def _errors(refused: list[PartitionResult]) -> list[common_pb2.PartitionError]:
    """The partitions not applied, each with why; one left out was applied (listing every applied
    one too cost a failover's worth of messages, docs/perf/controller-answers.md)."""
    return [
        common_pb2.PartitionError(topic=r.topic_partition.topic, partition=r.topic_partition.partition,
                                  error_code=r.error_code, error_message=r.message)
        for r in refused
    ]
