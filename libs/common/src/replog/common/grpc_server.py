"""gRPC server bootstrap shared by every service.

`start_server` binds the services a process offers, and on every server adds
the standard health service (SERVING per service and for "") and server
reflection, so grpcurl and clients in any language can discover the API.
With TLS files it serves mutual TLS only and authorizes every call against the
method table (security/); without (a process run with --insecure) it serves
plaintext to anyone. Either way every call then passes the edge (edge/): bounds
on its fields, with identities the limits per identity, and idle streams ended.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from replog.common.acls.enforcement import Enforcer
from replog.common.edge.admission import Admission
from replog.common.edge.guard import EdgeGuard
from replog.common.edge.idle_streams import IdleStreams
from replog.common.edge.settings import EdgeSettings
from replog.common.edge.validation import RequestChecker
from replog.common.grpc_connection import KEEPALIVE_TIME_MS, MESSAGE_BYTES_MAX
from replog.common.refusal_log import RefusalLog
from replog.common.security.authorization import Authorizer
from replog.common.security.credentials import ReloadingServerCredentials
from replog.common.security.files import TlsFiles
from replog.common.security.rules import RULES, Rule

log = logging.getLogger(__name__)

SERVER_KEEPALIVE_TIME_MS = 30_000
SERVER_KEEPALIVE_TIMEOUT_MS = 10_000
CONNECTION_IDLE_MS_MAX = 10 * 60_000
CONNECTION_AGE_MS_MAX = 60 * 60_000
CONNECTION_AGE_GRACE_MS = 5 * 60_000
HANDLER_THREADS_DEFAULT = 32
SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", MESSAGE_BYTES_MAX),
    ("grpc.max_send_message_length", MESSAGE_BYTES_MAX),
    ("grpc.so_reuseport", 0),
    # Accept those pings. By default a server allows one every 5 minutes on a connection it sends no
    # data on, and answers a third one sooner with GOAWAY "too_many_pings", closing the connection.
    # Half the clients' interval: a ping that arrives early (timers are not exact) is not a strike.
    ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
    ("grpc.keepalive_permit_without_calls", 1),  # pings on a connection with no call open, too
    # The server's own pings find a peer that vanished without closing its connection (one that does
    # not ping, as grpcurl or another language's client may not): its calls end, their threads return.
    ("grpc.keepalive_time_ms", SERVER_KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", SERVER_KEEPALIVE_TIMEOUT_MS),
    # A connection with no call for this long is closed; every connection is closed after its age
    # (GOAWAY, then the grace for the calls on it): clients reconnect, and no connection lives forever.
    ("grpc.max_connection_idle_ms", CONNECTION_IDLE_MS_MAX),
    ("grpc.max_connection_age_ms", CONNECTION_AGE_MS_MAX),
    ("grpc.max_connection_age_grace_ms", CONNECTION_AGE_GRACE_MS),
]


@dataclass(frozen=True)
class ServiceBinding:
    """One service to serve: its full name, the generated add_*_to_server function, the servicer."""

    full_name: str
    add_to_server: Callable[[Any, grpc.Server], None]
    servicer: Any


class OpenStreams:
    """The contexts of a servicer's long-lived streams, to end them all when the server stops.

    A graceful stop waits its whole grace period for a stream that is still open, though a
    stream that lives as long as its peer's channel (a health `Watch`, a follower's fetch
    stream) will not end by itself; `cancel_all` ends them first, and also any that reaches
    its handler afterwards (a peer's keeper `Watch` sent just before the stop can)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: set = set()
        self._closed = False

    def track(self, context) -> None:
        """Remember this RPC's context until the RPC ends (or end it now, once the server stops)."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._contexts.add(context)
        if closed:
            context.cancel()
            return
        context.add_callback(lambda: self._forget(context))

    def _forget(self, context) -> None:
        with self._lock:
            self._contexts.discard(context)

    def cancel_all(self) -> None:
        with self._lock:
            self._closed = True
            contexts = list(self._contexts)
        for context in contexts:
            context.cancel()


class _HealthServicer(health.HealthServicer):
    """The standard health service, whose `Watch` streams end when the server stops.

    Every peer's cached channel holds a `Watch` open (its keeper, channels.py). Answered
    without holding a handler thread (`experimental_non_blocking`).

    No status is sent while the library's lock is held. A send waits until the server's event
    thread completes it, and that thread runs each ending watch's close callback, which takes
    the lock: a send under the lock and a watch closing meanwhile wait for each other for good,
    and with the event thread stuck the whole server stops answering. The library sends a new
    watch's first status under its lock, so peers reconnecting while their old connections
    close (after a network cut heals) froze a broker; `Watch` and `set` here send after it."""

    def __init__(self) -> None:
        super().__init__(experimental_non_blocking=True)
        self._watches = OpenStreams()
        # `Watch` and `set` work on the library's own state: fail at start-up, not at a stop, if it moves.
        assert all(hasattr(self, name) for name in (
            "_lock", "_server_status", "_send_response_callbacks", "_gracefully_shutting_down")), \
            "grpcio-health-checking changed its HealthServicer's state; review _HealthServicer"

    def set(self, service: str, status) -> None:
        """The library's `set`, but sending to the watchers after its lock is released."""
        with self._lock:
            if self._gracefully_shutting_down:
                return
            self._server_status[service] = status
            watchers = list(self._send_response_callbacks.get(service, ()))
        for watcher in watchers:
            watcher.send_latest()

    def Watch(self, request, context, send_response_callback=None):
        assert send_response_callback is not None, "served non-blocking (experimental_non_blocking)"
        self._watches.track(context)
        service = request.service
        watcher = _Watcher(send_response_callback, lambda: self._status_of(service))
        with self._lock:
            # A service this server does not serve stays SERVICE_UNKNOWN (the services are fixed at start):
            # its watch is answered once and remembered nowhere, so made-up names cost no memory after it.
            known = service in self._server_status
            if known:
                self._send_response_callbacks.setdefault(service, set()).add(watcher)
            context.add_callback(self._forget(watcher, service if known else None))
        watcher.send_latest()

    def List(self, request, context):
        """Every service this server answers for, with its status. The library's servicer leaves `List` (a
        newer method of the health protocol) unimplemented: each call logged a traceback."""
        with self._lock:
            statuses = dict(self._server_status)
        return health_pb2.HealthListResponse(statuses={
            service: health_pb2.HealthCheckResponse(status=status) for service, status in statuses.items()})

    def _forget(self, watcher: "_Watcher", service: str | None) -> Callable[[], None]:
        """The close callback: forgets the watcher (and its service's entry once it has no watcher left)
        under the lock, then ends the call."""
        def callback() -> None:
            if service is not None:
                with self._lock:
                    watchers = self._send_response_callbacks.get(service)
                    if watchers is not None:
                        watchers.discard(watcher)
                        if not watchers:
                            del self._send_response_callbacks[service]
            watcher(None)

        return callback

    def _status_of(self, service: str):
        with self._lock:
            return self._server_status.get(service, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)

    def end_watches(self) -> None:
        self._watches.cancel_all()


class _Watcher:
    """One `Watch` call: sends its service's status whenever it differs from the last one sent.

    Sends one at a time, each the status current when it is sent, so a watcher never ends on a
    stale status however `Watch` and `set` interleave. Called with None (by the close callback, on the
    event thread) it ends the call without taking the lock, which a send may be
    holding while it waits for that thread."""

    def __init__(self, send: Callable[[Any], None], current: Callable[[], Any]) -> None:
        self._send = send
        self._current = current
        self._lock = threading.Lock()
        self._sent = None

    def send_latest(self) -> None:
        with self._lock:
            status = self._current()
            if status != self._sent:
                self._sent = status
                self._send(health_pb2.HealthCheckResponse(status=status))

    def __call__(self, response) -> None:
        if response is None:
            self._send(None)
        else:
            self.send_latest()  # a status from the library's own code: send the current one instead


@dataclass
class RunningServer:
    server: grpc.Server
    port: int
    health: _HealthServicer
    idle_streams: IdleStreams | None = None

    def set_serving(self, serving: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in self.health_names:
            self.health.set(name, status)

    health_names: tuple[str, ...] = ()

    def stop(self, grace_s: float = 2.0) -> None:
        self.set_serving(False)
        self.health.end_watches()  # peers' channel keepers; the grace is for real requests
        self.server.stop(grace_s).wait()
        if self.idle_streams is not None:
            self.idle_streams.stop()


def start_server(
    bindings: Sequence[ServiceBinding],
    *,
    host: str,
    port: int,
    max_workers: int = HANDLER_THREADS_DEFAULT,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    serving: bool = True,
    tls: TlsFiles | None = None,
    receive_bytes_max: int = MESSAGE_BYTES_MAX,
    concurrent_rpcs_max: int | None = None,
    edge: EdgeSettings = EdgeSettings(),
    enforcer: Enforcer | None = None,
    super_users: Sequence[str] = (),
    rules: Mapping[str, Rule] = RULES,
) -> RunningServer:
    """Start serving `bindings` plus health and reflection; returns the bound port.

    With `serving=False` health answers NOT_SERVING until `set_serving(True)`:
    for a process that is not ready when it starts listening (a broker before it
    registers in ZooKeeper). A request message over `receive_bytes_max` is refused with
    RESOURCE_EXHAUSTED, and so is an RPC beyond `concurrent_rpcs_max` open at once (None: no
    bound), both by gRPC before any handler or interceptor runs.

    With `tls`, the port takes only TLS connections from peers with a certificate of the cluster, and
    the authorization rules run before every other interceptor (`enforcer` answers the ACL questions of
    a server holding ACLs; `rules` is the method table, every service's but for a test's own); the files
    are reloaded when they change. The edge (edge/guard.py) runs next:
    request bounds, the limits per identity of `edge` (with TLS; `super_users` are not counted among the
    users), idle streams.
    """
    credentials = ReloadingServerCredentials(tls) if tls is not None else None
    idle_streams = IdleStreams(edge.stream_idle_ms_max)
    guard = EdgeGuard(
        checker=RequestChecker(), idle=idle_streams, refusals=RefusalLog(log, time.monotonic),
        admission=Admission(edge.edge_limits(max_workers)) if credentials is not None else None,
        super_users=frozenset(super_users))
    interceptors = [guard, *interceptors]
    if credentials is not None:
        interceptors = [Authorizer(enforcer, dict(rules)), *interceptors]
    options = [o for o in SERVER_OPTIONS if o[0] != "grpc.max_receive_message_length"]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"),
        options=options + [("grpc.max_receive_message_length", receive_bytes_max)],
        interceptors=list(interceptors),
        maximum_concurrent_rpcs=concurrent_rpcs_max,
    )
    for binding in bindings:
        binding.add_to_server(binding.servicer, server)
    health_servicer = _HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [b.full_name for b in bindings]
    reflection.enable_server_reflection(
        names + [health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME], server
    )
    address = f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"  # IPv6 literal
    if credentials is None:
        bound = server.add_insecure_port(address)
    else:
        bound = server.add_secure_port(address, credentials.credentials)
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port} (in use or not allowed)")
    server.start()
    running = RunningServer(server=server, port=bound, health=health_servicer, idle_streams=idle_streams,
                            health_names=("", *names))
    running.set_serving(serving)
    log.info("serving %s on %s:%d (%s)", ", ".join(names), host, bound,
             f"mutual TLS, certificate {tls.cert_file}" if tls is not None else "plaintext, no authorization")
    return running
