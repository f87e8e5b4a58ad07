"""Sends a plan's broker requests: one request of each kind per broker, all
brokers in parallel, each carrying the controller's id and epoch.

A broker that cannot be reached is not retried here: it gets the whole current
state (LeaderAndIsr with init) when it registers again, or a resync from the
event loop, so nothing is lost by giving up. One still not connected after a
request to it failed in transit is not waited for again until it connects. The W3C trace context of the current span rides in the metadata so
the brokers' handling joins the controller's trace.

An INIT LeaderAndIsr and a full UpdateMetadata are first sent as a digest of
their content (`replog.common.state_digest`); only a broker that answers that
it holds something else gets the full request. After a controller failover
nothing has usually changed, and applying the full requests again would keep
the brokers busy for seconds (docs/perf/state-digest.md).

Sending costs the controller as little as possible, since it happens on the
failover's critical path: no connectivity probe before a request to a channel
grpcio last reported READY, and each partition's proto built once per wave,
not once per broker (docs/perf/broker-request-sending.md).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace

from replog.common import rpc_spans, state_digest, telemetry
from replog.common.channels import ChannelCache
from replog.common.core.partitions import TopicPartition
from replog.controller.core import plan as p
from replog.controller.core.model import ControllerState
from replog.v1 import broker_control_pb2, broker_control_pb2_grpc, common_pb2

log = logging.getLogger(__name__)
tracer = trace.get_tracer("replog.controller")
SERVICE = broker_control_pb2.DESCRIPTOR.services_by_name["BrokerControlService"].full_name

# The loop waits for every broker's answer, so a frozen broker (SIGSTOP, a GC
# pause) must not hold it long: the deadline grows with the request's size
# (a 100K-partition INIT takes seconds to apply) from a small base.
REQUEST_TIMEOUT_BASE_S = 3.0
REQUEST_TIMEOUT_PER_PARTITION_S = 0.0002
REQUEST_TIMEOUT_MAX_S = 60.0
RECONNECT_WAIT_S = 1.5  # see _await_reconnect


def request_timeout_s(partitions: int) -> float:
    return min(REQUEST_TIMEOUT_MAX_S, REQUEST_TIMEOUT_BASE_S + partitions * REQUEST_TIMEOUT_PER_PARTITION_S)


@dataclass
class BrokerOutcome:
    broker_id: int
    ok: bool
    seconds: float
    error: str = ""
    # A request failed in transit (deadline, connection) to this registration (broker_epoch):
    # the broker may have missed it and should get its whole state again.
    transport_failed: bool = False
    broker_epoch: int = 0
    # StopReplica results: partitions stopped / failed (for topic deletion).
    stopped: list[TopicPartition] = field(default_factory=list)
    failed: list[TopicPartition] = field(default_factory=list)


def _partition_state(decision: p.PartitionDecision) -> broker_control_pb2.PartitionState:
    tp, state, assignment = decision.partition, decision.state, decision.assignment
    return broker_control_pb2.PartitionState(
        topic=tp.topic, partition=tp.partition, leader=state.leader, leader_epoch=state.leader_epoch,
        isr=state.isr, partition_epoch=state.partition_epoch, replicas=assignment.replicas,
        adding_replicas=assignment.adding, removing_replicas=assignment.removing, is_new=decision.is_new,
    )


class BrokerRequestSender:
    def __init__(self, channels: ChannelCache, controller_id: int, controller_epoch: int) -> None:
        self._channels = channels
        self._controller_id = controller_id
        self._controller_epoch = controller_epoch
        self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="broker-rpc")
        self._connectivity = ChannelConnectivity()
        # One full UpdateMetadata goes to every broker: its digest is computed by the first
        # sender thread to need it while the others wait, not by each (docs/perf/state-digest.md).
        self._digest_lock = threading.Lock()
        # Registrations (broker id, broker epoch) whose last request failed in transit. While the
        # channel to one is still not connected, the next request fails at once instead of
        # waiting out the reconnect and the call's deadline: the event loop waits for every
        # broker's answer, and a broker behind a network cut (registered until its session
        # expires) would otherwise hold every decision meanwhile -- the election that replaces it
        # included. The loop resyncs the broker once a request to it succeeds again.
        self._unreachable: set[tuple[int, int]] = set()
        self._unreachable_lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def prepare(self, leader_and_isr=(), update_metadata=()) -> Future:
        """Build the protos `start` will need for these requests on a sender thread, meanwhile
        (a future of them for `start(prepared=...)`). The executor does it for a wave that goes
        out before Apply, while the ZooKeeper writes ahead of it are in flight: the loop only
        waits for ZooKeeper then (docs/perf/first-wave.md)."""
        return self._pool.submit(self._build_protos, leader_and_isr, update_metadata)

    def start(self, state: ControllerState, leader_and_isr=(), update_metadata=(),
              stop_replica=(), *, prepared: Future | None = None) -> dict[int, Future]:
        """Start sending the requests: a future of the outcome per broker contacted. To one
        broker they go in the order LeaderAndIsr, UpdateMetadata, StopReplica."""
        per_broker: dict[int, list] = {}
        for request in leader_and_isr:
            per_broker.setdefault(request.broker_id, []).append(request)
        for update in update_metadata:
            for broker_id in update.broker_ids:
                per_broker.setdefault(broker_id, []).append(update)
        for request in stop_replica:
            per_broker.setdefault(request.broker_id, []).append(request)
        proto_cache = prepared.result() if prepared is not None else {}
        self._build_protos(leader_and_isr, update_metadata, proto_cache)
        ctx = otel_context.get_current()
        return {
            broker_id: self._pool.submit(self._send_to_broker, state, broker_id, requests, proto_cache, ctx)
            for broker_id, requests in per_broker.items()
        }

    def _build_protos(self, leader_and_isr, update_metadata, cache: dict | None = None) -> dict:
        """Built once per call, not by each sender thread: a partition's state goes to its leader and
        its followers alike, and threads building the same thousands of protos at once each
        waited on the other for the interpreter lock. A digest-first request (INIT, full
        UpdateMetadata) usually needs none, so its protos are built only if it does."""
        cache = {} if cache is None else cache
        for request in leader_and_isr:
            if not request.init:
                self._protos(request.partitions, cache)
        for update in update_metadata:
            if not update.full:
                self._protos(update.partitions, cache)
        return cache

    def _protos(self, decisions, cache) -> list:
        out = []
        for decision in decisions:
            key = id(decision)
            proto = cache.get(key)
            if proto is None:
                proto = cache[key] = _partition_state(decision)
            out.append(proto)
        return out

    def _send_to_broker(self, state: ControllerState, broker_id: int, requests: list, cache, ctx) -> BrokerOutcome:
        token = otel_context.attach(ctx)
        started = time.monotonic()
        outcome = BrokerOutcome(broker_id, True, 0.0)
        try:
            broker = state.live_brokers.get(broker_id)
            if broker is None:
                outcome.ok, outcome.error = False, "broker not alive"
                for request in requests:
                    if isinstance(request, p.StopReplicaRequest):
                        outcome.failed.extend(x.partition for x in request.partitions if x.delete)
                return outcome
            outcome.broker_epoch = broker.broker_epoch
            registration = (broker_id, broker.broker_epoch)
            address = f"{broker.host}:{broker.port}"
            channel = self._channels.get(address)
            if not self._connectivity.ready(channel):
                with self._unreachable_lock:
                    known_unreachable = registration in self._unreachable
                if known_unreachable:
                    outcome.ok, outcome.transport_failed = False, True
                    outcome.error = f"broker {broker_id} is still not connected after a request failed in transit"
                    log.warning("%s: %d request(s) not sent", outcome.error, len(requests))
                    for request in requests:
                        if isinstance(request, p.StopReplicaRequest):
                            outcome.failed.extend(x.partition for x in request.partitions if x.delete)
                    return outcome
                _await_reconnect(channel)
            stub = broker_control_pb2_grpc.BrokerControlServiceStub(channel)
            for request in requests:
                self._send_one(state, stub, address, broker_id, request, cache, outcome)
            with self._unreachable_lock:
                if outcome.transport_failed:  # (an older registration of the broker is forgotten)
                    self._unreachable = {r for r in self._unreachable if r[0] != broker_id} | {registration}
                else:
                    self._unreachable.discard(registration)
        finally:
            outcome.seconds = time.monotonic() - started
            otel_context.detach(token)
        return outcome

    def _send_one(self, state, stub, address: str, broker_id: int, request, cache, outcome: BrokerOutcome) -> None:
        """One request of the plan to one broker: a `controller.send.<Request>` span around its RPCs
        (a confirm-only digest, then the full request when needed), marked failed with them."""
        kind = type(request).__name__
        partitions = len(request.partitions)
        with tracer.start_as_current_span(
            f"controller.send.{kind}",
            attributes={"broker.id": broker_id, "partitions": partitions, "controller.epoch": self._controller_epoch},
        ) as span:
            try:
                reply = self._call(state, stub, address, request, cache)
            except grpc.RpcError as exc:
                outcome.ok = False
                outcome.transport_failed = True
                outcome.error = f"{kind} to broker {broker_id} failed: {exc.code().name}"
                telemetry.mark_failed(span, exc.code().name, outcome.error)
                log.warning("%s", outcome.error)
                if isinstance(request, p.StopReplicaRequest):
                    outcome.failed.extend(x.partition for x in request.partitions if x.delete)
                return
            if reply.error_code != common_pb2.ERROR_CODE_NONE:
                outcome.ok = False
                outcome.error = f"{kind} refused by broker {broker_id}: {reply.error_message}"
                rpc_spans.mark_answer(span, reply)
                log.warning("%s", outcome.error)
            if isinstance(request, p.StopReplicaRequest):
                bad = {(e.topic, e.partition) for e in reply.partitions if e.error_code != common_pb2.ERROR_CODE_NONE}
                for item in request.partitions:
                    if not item.delete:
                        continue
                    failed = reply.error_code != common_pb2.ERROR_CODE_NONE or tuple(item.partition) in bad
                    (outcome.failed if failed else outcome.stopped).append(item.partition)

    @staticmethod
    def _rpc(stub, method: str, address: str, message, timeout_s: float):
        """One RPC to a broker in its own CLIENT span (rpc_spans.py), which its metadata carries."""
        with rpc_spans.client_call(SERVICE, method, address) as call:
            return call.answered(getattr(stub, method)(message, timeout=timeout_s, metadata=call.metadata()))

    def _call(self, state, stub, address: str, request, cache):
        if isinstance(request, p.LeaderAndIsrRequest):
            leaders = sorted({d.state.leader for d in request.partitions if d.state.leader >= 0})
            endpoints = _endpoints(state, leaders)
            if request.init:
                reply = self._rpc(stub, "LeaderAndIsr", address, broker_control_pb2.LeaderAndIsrRequest(
                    controller_id=self._controller_id, controller_epoch=self._controller_epoch, leaders=endpoints,
                    broker_epoch=request.broker_epoch,
                    replica_state_digest=_replica_digest(request.broker_id, request.partitions),
                ), REQUEST_TIMEOUT_BASE_S)
                if _confirmed(reply):
                    return reply
            message = broker_control_pb2.LeaderAndIsrRequest(
                controller_id=self._controller_id, controller_epoch=self._controller_epoch, init=request.init,
                partitions=self._protos(request.partitions, cache), leaders=endpoints,
                broker_epoch=request.broker_epoch,
            )
            return self._rpc(stub, "LeaderAndIsr", address, message, request_timeout_s(len(message.partitions)))
        if isinstance(request, p.UpdateMetadata):
            if request.full:
                key = ("metadata digest", id(request))
                with self._digest_lock:
                    digest = cache.get(key)
                    if digest is None:
                        digest = cache[key] = _metadata_digest(request.partitions)
                reply = self._rpc(stub, "UpdateMetadata", address, broker_control_pb2.UpdateMetadataRequest(
                    controller_id=self._controller_id, controller_epoch=self._controller_epoch,
                    live_brokers=_endpoints(state, [b.broker_id for b in request.live_brokers], request.live_brokers),
                    metadata_digest=digest,
                ), REQUEST_TIMEOUT_BASE_S)
                if _confirmed(reply):
                    return reply
            message = broker_control_pb2.UpdateMetadataRequest(
                controller_id=self._controller_id, controller_epoch=self._controller_epoch,
                live_brokers=_endpoints(state, [b.broker_id for b in request.live_brokers], request.live_brokers),
                partitions=self._protos(request.partitions, cache), deleted_topics=request.deleted_topics,
                full=request.full,
            )
            return self._rpc(stub, "UpdateMetadata", address, message, request_timeout_s(len(message.partitions)))
        message = broker_control_pb2.StopReplicaRequest(
            controller_id=self._controller_id, controller_epoch=self._controller_epoch,
            partitions=[broker_control_pb2.StopReplicaPartition(
                topic=x.partition.topic, partition=x.partition.partition, leader_epoch=x.leader_epoch, delete=x.delete)
                for x in request.partitions],
            broker_epoch=request.broker_epoch,
        )
        return self._rpc(stub, "StopReplica", address, message, request_timeout_s(len(message.partitions)))


def _replica_digest(broker_id: int, decisions) -> bytes:
    """What the broker's replicas hold after this INIT (see `state_digest`)."""
    term = state_digest.replica_term
    return state_digest.Digest.of(
        term(d.partition.topic, d.partition.partition, d.state.leader, d.state.leader_epoch, d.state.partition_epoch,
             broker_id)
        for d in decisions).encode()


def _metadata_digest(decisions) -> bytes:
    """What a broker's metadata cache holds after this full UpdateMetadata (see `state_digest`)."""
    term = state_digest.metadata_term
    return state_digest.Digest.of(
        term(d.partition.topic, d.partition.partition, d.state.leader, d.state.leader_epoch,
             d.state.partition_epoch, d.state.isr, d.assignment.replicas, d.assignment.adding, d.assignment.removing)
        for d in decisions).encode()


def _confirmed(reply) -> bool:
    """A confirm-only request answered: True when the full request can be skipped. A refusal
    (fencing) is final too: the full request would be refused for the same reason."""
    confirmed = reply.error_code != common_pb2.ERROR_CODE_NONE or reply.state_digest_matched
    trace.get_current_span().set_attribute("state_digest_matched", bool(reply.state_digest_matched))
    return confirmed


class ChannelConnectivity:
    """What grpcio last reported of each channel's connection, from one subscription per channel.

    `_await_reconnect` is needed only by a channel that is not connected. Asking every channel
    (`channel_ready_future`) subscribes and unsubscribes each time, which starts grpcio threads
    and, on a busy process, delays each broker's first request (docs/perf/broker-request-sending.md).
    A stale READY (a broker that restarted between two of grpcio's polls) makes the call fail in
    transit, and the event loop resyncs that broker's whole state a moment later, as after any
    request lost in transit.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[grpc.Channel, grpc.ChannelConnectivity | None] = {}

    def ready(self, channel: grpc.Channel) -> bool:
        with self._lock:
            if channel in self._states:
                return self._states[channel] is grpc.ChannelConnectivity.READY
            self._states[channel] = None
        channel.subscribe(lambda state: self._record(channel, state), try_to_connect=True)
        return False

    def _record(self, channel: grpc.Channel, state: grpc.ChannelConnectivity) -> None:
        with self._lock:
            self._states[channel] = state


def _await_reconnect(channel: grpc.Channel) -> None:
    """Give a channel in reconnect back-off one chance to connect before sending.

    A broker that just restarted registers as soon as it serves; the channel to
    its address may still be backing off from the failures while it was down
    (up to the channel's max reconnect back-off, 1 s), and a call on it would
    fail at once with UNAVAILABLE -- losing the INIT LeaderAndIsr that is never
    resent. A broker that is really gone costs at most RECONNECT_WAIT_S here.
    """
    try:
        grpc.channel_ready_future(channel).result(timeout=RECONNECT_WAIT_S)
    except grpc.FutureTimeoutError:
        pass  # the call below fails with UNAVAILABLE and is reported as before


def _endpoints(state, broker_ids, infos=None):
    infos = infos if infos is not None else [state.live_brokers[i] for i in broker_ids if i in state.live_brokers]
    return [common_pb2.BrokerEndpoint(broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack or "",
                                      kafka_port=b.kafka_port)
            for b in infos]
