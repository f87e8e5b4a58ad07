"""gRPC ControllerService: converts protobuf to events for the controller loop
and the plan's reply back to protobuf. A standby (or a controller that just
lost its seat) answers NOT_CONTROLLER, so the broker retries against the
controller named in /controller."""

from __future__ import annotations

import concurrent.futures

from opentelemetry import trace

from replog.common import telemetry
from replog.common.core.partitions import TopicPartition
from replog.controller.adapters.event_loop import NotController
from replog.controller.core import events as ev
from replog.v1 import common_pb2, controller_pb2, controller_pb2_grpc

NOT_CONTROLLER = common_pb2.ERROR_CODE_NOT_CONTROLLER
RPC_WAIT_S = 30.0
TOPIC_NAME_CHARS_MAX = 249  # as Kafka's
RESIGN_PARTITIONS_MAX = 10000  # partitions one ControlledShutdown may name to give up (controller.proto)


class ControllerServicer(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, process) -> None:
        self._process = process

    def _standby_message(self) -> str:
        return f"controller {self._process.config.controller_id} is not the active controller"

    def AlterPartition(self, request, context):
        items = []
        for item in request.partitions:
            if not item.topic or item.partition < 0:
                return controller_pb2.AlterPartitionResponse(
                    error_code=common_pb2.ERROR_CODE_INVALID_REQUEST,
                    error_message=f"bad partition {item.topic!r}-{item.partition} in AlterPartition")
            items.append(ev.AlterPartitionItem(TopicPartition(item.topic, item.partition), item.leader_epoch,
                                               tuple(item.new_isr), item.partition_epoch,
                                               tuple(item.new_isr_broker_epochs)))
        event = ev.AlterPartitionReceived(request.broker_id, request.broker_epoch, tuple(items))
        caller = trace.get_current_span(telemetry.extract_context(context.invocation_metadata())).get_span_context()
        links = (caller,) if caller.is_valid else ()
        try:
            reply = self._process.loop.call(event, RPC_WAIT_S, links=links)
        except NotController:
            return controller_pb2.AlterPartitionResponse(error_code=NOT_CONTROLLER,
                                                         error_message=self._standby_message())
        except concurrent.futures.TimeoutError:
            return controller_pb2.AlterPartitionResponse(error_code=common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
                                                         error_message="the controller did not decide in time")
        except Exception as exc:  # noqa: BLE001 - answered as a typed error, never a crash
            return controller_pb2.AlterPartitionResponse(error_code=common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR,
                                                         error_message=str(exc))
        results = []
        for result in reply.results:
            state = result.state
            results.append(controller_pb2.AlterPartitionResult(
                topic=result.partition.topic, partition=result.partition.partition, error_code=int(result.error),
                error_message=result.message,
                leader=state.leader if state else -1, leader_epoch=state.leader_epoch if state else -1,
                isr=state.isr if state else (), partition_epoch=state.partition_epoch if state else -1,
            ))
        return controller_pb2.AlterPartitionResponse(error_code=int(reply.error), error_message=reply.message,
                                                     partitions=results)

    def ControlledShutdown(self, request, context):
        problem = _resign_problem(request)
        if problem:
            return controller_pb2.ControlledShutdownResponse(error_code=common_pb2.ERROR_CODE_INVALID_REQUEST,
                                                             error_message=f"ControlledShutdown: {problem}")
        event = ev.ControlledShutdownRequested(request.broker_id, request.broker_epoch, tuple(
            TopicPartition(p.topic, p.partition) for p in request.partitions))
        try:
            reply = self._process.loop.call(event, RPC_WAIT_S)
        except NotController:
            return controller_pb2.ControlledShutdownResponse(error_code=NOT_CONTROLLER,
                                                             error_message=self._standby_message())
        except concurrent.futures.TimeoutError:
            return controller_pb2.ControlledShutdownResponse(error_code=common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
                                                             error_message="the controller did not decide in time")
        except Exception as exc:  # noqa: BLE001
            return controller_pb2.ControlledShutdownResponse(error_code=common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR,
                                                             error_message=str(exc))
        return controller_pb2.ControlledShutdownResponse(
            error_code=int(reply.error), error_message=reply.message,
            remaining_partitions=[common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition)
                                  for tp in reply.remaining],
        )

    def LogDirsOffline(self, request, context):
        def answer(code, message):
            return controller_pb2.LogDirsOfflineResponse(error_code=code, error_message=message)

        problem = _offline_report_problem(request)
        if problem:
            return answer(common_pb2.ERROR_CODE_INVALID_REQUEST, f"LogDirsOffline: {problem}")
        event = ev.LogDirsOfflineReported(
            request.broker_id, request.broker_epoch, tuple(request.offline_log_dirs),
            tuple(TopicPartition(p.topic, p.partition) for p in request.partitions))
        try:
            reply = self._process.loop.call(event, RPC_WAIT_S)
        except NotController:
            return answer(NOT_CONTROLLER, self._standby_message())
        except concurrent.futures.TimeoutError:
            return answer(common_pb2.ERROR_CODE_REQUEST_TIMED_OUT, "the controller did not decide in time")
        except Exception as exc:  # noqa: BLE001 - answered as a typed error, never a crash
            return answer(common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR, str(exc))
        return answer(int(reply.error), reply.message)


def _offline_report_problem(request) -> str | None:
    if not request.offline_log_dirs or not all(request.offline_log_dirs):
        return "name at least one offline log directory, and no empty one"
    return _partitions_problem(request.partitions)


def _resign_problem(request) -> str | None:
    if len(request.partitions) > RESIGN_PARTITIONS_MAX:
        return (f"names {len(request.partitions)} partitions to give up, more than {RESIGN_PARTITIONS_MAX}: "
                "split the request")
    return _partitions_problem(request.partitions)


def _partitions_problem(partitions) -> str | None:
    for item in partitions:
        if not item.topic or len(item.topic) > TOPIC_NAME_CHARS_MAX or item.partition < 0:
            return (f"bad partition {item.topic[:TOPIC_NAME_CHARS_MAX]!r}-{item.partition}: a topic of 1 to "
                    f"{TOPIC_NAME_CHARS_MAX} characters and a partition from 0")
    return None
