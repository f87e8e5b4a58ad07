"""gRPC BrokerControlService: the controller's LeaderAndIsr, StopReplica and UpdateMetadata.

Thin: fence the sender, convert protobuf to domain values, call
ReplicaStateChanges / the metadata cache, convert back. Fencing, for every
request: a controller epoch lower than the highest seen is a zombie controller
(STALE_CONTROLLER_EPOCH, nothing applied); a broker epoch lower than this
broker's registration is addressed to an earlier incarnation
(STALE_BROKER_EPOCH). A higher broker epoch is accepted: it can only be a
registration this process made and has not recorded yet (czxids increase).
"""

from __future__ import annotations

import threading
from typing import Callable

from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.control.state_changes import PartitionResult, ReplicaStateChanges, StopRequest
from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.replicas.checkpointer import ControlBursts
from replog.common import telemetry
from replog.common.core.partitions import TopicPartition
from replog.v1 import broker_control_pb2, broker_control_pb2_grpc, common_pb2


class ControllerEpochFence:
    """The highest controller epoch seen; lower ones are refused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._controller_epoch = -1

    def admit(self, controller_epoch: int) -> str | None:
        with self._lock:
            if controller_epoch < self._controller_epoch:
                return f"controller epoch {controller_epoch} < {self._controller_epoch} already seen"
            self._controller_epoch = controller_epoch
            return None


class BrokerControlServicer(broker_control_pb2_grpc.BrokerControlServiceServicer):
    def __init__(
        self, *, state_changes: ReplicaStateChanges, metadata: MetadataCache, broker_epoch_of: Callable[[], int],
        bursts: ControlBursts | None = None,
    ) -> None:
        self._bursts = bursts
        self._state_changes = state_changes
        self._metadata = metadata
        self._broker_epoch_of = broker_epoch_of
        self._fence = ControllerEpochFence()

    def _refuse(self, controller_epoch: int, broker_epoch: int) -> tuple[int, str] | None:
        if self._bursts is not None:
            self._bursts.note()  # the checkpointer steps aside while the controller's requests keep coming
        stale = self._fence.admit(controller_epoch)
        if stale is not None:
            return ErrorCode.STALE_CONTROLLER_EPOCH, stale
        ours = self._broker_epoch_of()
        if broker_epoch and broker_epoch < ours:
            return ErrorCode.STALE_BROKER_EPOCH, f"broker epoch {broker_epoch} < this registration's {ours}"
        return None

    def LeaderAndIsr(self, request, context):
        refused = self._refuse(request.controller_epoch, request.broker_epoch)
        if refused is not None:
            return broker_control_pb2.LeaderAndIsrResponse(error_code=refused[0], error_message=refused[1])
        if request.replica_state_digest:
            return self._confirm_replicas(request)
        malformed = [ps for ps in request.partitions if not ps.topic or ps.partition < 0]
        if malformed:
            return broker_control_pb2.LeaderAndIsrResponse(
                error_code=ErrorCode.INVALID_REQUEST,
                error_message=f"bad partition {malformed[0].topic!r}-{malformed[0].partition}")
        # Positional, and no tuple built for an empty `adding`: thousands per request after a failover.
        decisions = [
            LeaderAndIsrDecision(TopicPartition(ps.topic, ps.partition), ps.leader, ps.leader_epoch, tuple(ps.isr),
                                 ps.partition_epoch, tuple(ps.replicas), ps.is_new,
                                 tuple(ps.adding_replicas) if ps.adding_replicas else ())
            for ps in request.partitions
        ]
        self._metadata.remember_leader_endpoints(request.leaders)
        parent = telemetry.extract_context(context.invocation_metadata())
        results = self._state_changes.leader_and_isr(decisions, init=request.init, parent=parent)
        return broker_control_pb2.LeaderAndIsrResponse(partitions=_errors(results))

    def _confirm_replicas(self, request) -> broker_control_pb2.LeaderAndIsrResponse:
        if request.init or request.partitions:
            return broker_control_pb2.LeaderAndIsrResponse(
                error_code=ErrorCode.INVALID_REQUEST,
                error_message="replica_state_digest confirms a state: send it without init and without partitions")
        self._metadata.remember_leader_endpoints(request.leaders)
        matched = self._state_changes.confirm_replicas(request.replica_state_digest)
        return broker_control_pb2.LeaderAndIsrResponse(state_digest_matched=matched)

    def StopReplica(self, request, context):
        refused = self._refuse(request.controller_epoch, request.broker_epoch)
        if refused is not None:
            return broker_control_pb2.StopReplicaResponse(error_code=refused[0], error_message=refused[1])
        requests = [
            StopRequest(TopicPartition(p.topic, p.partition), p.leader_epoch, p.delete) for p in request.partitions
        ]
        results = self._state_changes.stop_replicas(requests)
        return broker_control_pb2.StopReplicaResponse(partitions=_errors(results))

    def UpdateMetadata(self, request, context):
        refused = self._refuse(request.controller_epoch, 0)
        if refused is not None:
            return broker_control_pb2.UpdateMetadataResponse(error_code=refused[0], error_message=refused[1])
        if request.metadata_digest:
            if request.full or request.partitions or request.deleted_topics:
                return broker_control_pb2.UpdateMetadataResponse(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message="metadata_digest confirms a state: "
                                  "send it without full, partitions or deleted topics")
            return broker_control_pb2.UpdateMetadataResponse(state_digest_matched=self._metadata.confirm(request))
        self._metadata.update(request)
        return broker_control_pb2.UpdateMetadataResponse()


def _errors(results: list[PartitionResult]) -> list[common_pb2.PartitionError]:
    """The partitions not applied, each with why; one left out was applied (listing every applied
    one too cost a failover's worth of messages, docs/perf/controller-answers.md)."""
    return [
        common_pb2.PartitionError(topic=r.topic_partition.topic, partition=r.topic_partition.partition,
                                  error_code=r.error_code, error_message=r.message)
        for r in results if r.error_code != ErrorCode.NONE
    ]
