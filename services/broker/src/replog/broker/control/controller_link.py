"""How the broker reaches the active controller: /controller names its host and port.

A kazoo DataWatch keeps the address current; calls go through the shared
channel cache, each in a CLIENT span whose context rides in its metadata
(replog.common.rpc_spans). Callers retry:
`ControllerUnavailable` (no controller seated, or the RPC failed in transport)
and a NOT_CONTROLLER answer both mean "ask again shortly". This is the broker's
edge towards the controller: callers pass and get domain values, and the
protobuf messages are built and read here.
"""

from __future__ import annotations

import logging
import threading
from typing import Iterable, NamedTuple

import grpc
from kazoo.recipe.watchers import DataWatch

from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal
from replog.common import rpc_spans
from replog.common.channels import CONTROL_RPC_TIMEOUT_S, ChannelCache
from replog.common.core.partitions import TopicPartition
from replog.common.zk import schema
from replog.common.zk.client import ZkClient
from replog.v1 import common_pb2, controller_pb2, controller_pb2_grpc

log = logging.getLogger(__name__)
SERVICE = controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name


class ControllerUnavailable(Exception):
    """No controller could be asked (none seated, or the call failed in transport)."""


class PartitionAnswer(NamedTuple):
    topic_partition: TopicPartition
    answer: AlterPartitionAnswer
    error_message: str


class AlterPartitionReply(NamedTuple):
    error_code: ErrorCode  # of the request as a whole; NONE when `answers` holds one per partition
    error_message: str
    answers: tuple[PartitionAnswer, ...]


class ShutdownReply(NamedTuple):
    error_code: ErrorCode
    error_message: str
    remaining: tuple[TopicPartition, ...]  # partitions this broker still leads


class ControllerLink:
    def __init__(self, zk: ZkClient, channels: ChannelCache) -> None:
        self._zk = zk
        self._channels = channels
        self._lock = threading.Lock()
        self._address: str | None = None
        self._controller_id = -1

    def start(self) -> None:
        DataWatch(self._zk.kazoo, schema.CONTROLLER, self._on_controller)

    def _on_controller(self, data, stat) -> None:
        address, controller_id = None, -1
        if data:
            try:
                record = schema.ControllerRecord.decode(data)
                controller_id = record.controller_id
                if record.host and record.port:
                    address = f"{record.host}:{record.port}"
            except schema.ZkDataError as exc:
                log.warning("unreadable %s: %s", schema.CONTROLLER, exc)
        with self._lock:
            self._address, self._controller_id = address, controller_id
        log.info("active controller: %s (%s)", controller_id, address or "unknown address")

    def _call(self, method: str, request, timeout_s: float):
        """One call to the active controller, in a CLIENT span whose context its metadata carries (rpc_spans.py)."""
        with self._lock:
            address = self._address
        if address is None:
            raise ControllerUnavailable("no active controller in /controller")
        stub = controller_pb2_grpc.ControllerServiceStub(self._channels.get(address))
        with rpc_spans.client_call(SERVICE, method, address) as call:
            return call.answered(getattr(stub, method)(request, timeout=timeout_s, metadata=call.metadata()))

    def alter_partition(
        self, broker_id: int, broker_epoch: int, proposals: Iterable[AlterPartitionProposal],
        timeout_s: float = CONTROL_RPC_TIMEOUT_S,
    ) -> AlterPartitionReply:
        request = controller_pb2.AlterPartitionRequest(broker_id=broker_id, broker_epoch=broker_epoch, partitions=[
            controller_pb2.AlterPartitionItem(
                topic=p.topic_partition.topic, partition=p.topic_partition.partition, leader_epoch=p.leader_epoch,
                new_isr=p.new_isr, partition_epoch=p.partition_epoch, new_isr_broker_epochs=p.new_isr_broker_epochs,
            )
            for p in proposals
        ])
        try:
            response = self._call("AlterPartition", request, timeout_s)
        except grpc.RpcError as exc:
            raise ControllerUnavailable(f"AlterPartition: {exc.code().name}: {exc.details()}") from None
        return AlterPartitionReply(ErrorCode(response.error_code), response.error_message, tuple(
            PartitionAnswer(
                TopicPartition(r.topic, r.partition),
                AlterPartitionAnswer(error_code=ErrorCode(r.error_code), leader_id=r.leader,
                                     leader_epoch=r.leader_epoch, isr=tuple(r.isr), partition_epoch=r.partition_epoch),
                r.error_message,
            )
            for r in response.partitions
        ))

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, timeout_s: float = CONTROL_RPC_TIMEOUT_S
    ) -> ShutdownReply:
        """Move every leadership off this broker, which is stopping."""
        return self._controlled_shutdown(controller_pb2.ControlledShutdownRequest(
            broker_id=broker_id, broker_epoch=broker_epoch), timeout_s)

    def resign_leadership(
        self, broker_id: int, broker_epoch: int, partitions: Iterable[TopicPartition],
        timeout_s: float = CONTROL_RPC_TIMEOUT_S,
    ) -> ShutdownReply:
        """ControlledShutdown naming `partitions`: the broker keeps running and gives up leading just those."""
        return self._controlled_shutdown(controller_pb2.ControlledShutdownRequest(
            broker_id=broker_id, broker_epoch=broker_epoch,
            partitions=[common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in partitions]),
            timeout_s)

    def _controlled_shutdown(self, request, timeout_s: float) -> ShutdownReply:
        try:
            response = self._call("ControlledShutdown", request, timeout_s)
        except grpc.RpcError as exc:
            raise ControllerUnavailable(f"ControlledShutdown: {exc.code().name}: {exc.details()}") from None
        return ShutdownReply(ErrorCode(response.error_code), response.error_message,
                             tuple(TopicPartition(p.topic, p.partition) for p in response.remaining_partitions))

    def log_dirs_offline(
        self, broker_id: int, broker_epoch: int, offline_dirs: Iterable[str], partitions: Iterable[TopicPartition],
        timeout_s: float = CONTROL_RPC_TIMEOUT_S,
    ) -> tuple[ErrorCode, str]:
        request = controller_pb2.LogDirsOfflineRequest(
            broker_id=broker_id, broker_epoch=broker_epoch, offline_log_dirs=list(offline_dirs),
            partitions=[common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in partitions])
        try:
            response = self._call("LogDirsOffline", request, timeout_s)
        except grpc.RpcError as exc:
            raise ControllerUnavailable(f"LogDirsOffline: {exc.code().name}: {exc.details()}") from None
        return ErrorCode(response.error_code), response.error_message
