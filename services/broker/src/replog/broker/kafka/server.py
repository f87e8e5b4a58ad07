"""The Kafka listener's socket side: accept, TLS, framing, one thread per connection.

Each connection is served by its own thread, in order: read a size-prefixed request, decode its
header and body (apis.py, schema.py), hand it to the dispatcher, write the answer. Kafka clients
send several requests before reading the answers and expect them in order, which one thread per
connection gives for free; the broker's produce and fetch paths block (acks=all waits, fetch
long-polls), which a thread may do.

Bounds: a request larger than `request_bytes_max` closes the connection (Kafka does the same: the
size prefix is all there is to go by); at most `connections_max` connections are served at once,
further ones are closed at accept; one identity holds at most `principal_connections_max` of them
(super users apart), further ones of it are closed after the handshake, so one user certificate cannot
take the listener from the others; a TLS handshake must end within HANDSHAKE_TIMEOUT_S, and a
connection that sends no request for `idle_ms` is closed (Kafka's connections.max.idle.ms), so
connections that hold a thread and send nothing do not stay. A request for an API not listed, or a
version not offered, is answered UNSUPPORTED_VERSION and the connection stays open. A request whose
header or body does not decode closes the connection, as a Kafka broker does with a request it cannot
parse: only a broken client sends one, and no answer could tell it what it got wrong.

TLS: with the cluster's files the listener demands a client certificate signed by the cluster's CA,
and the certificate's `replog://` SAN URI is the connection's principal (security/principal.py),
as on the gRPC port. Without them (a cluster run with --insecure) it serves plaintext and every
connection is anonymous.
"""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import threading
from dataclasses import dataclass
from typing import Callable

from replog.broker.kafka import apis
from replog.broker.kafka.schema import read_struct, write_struct
from replog.broker.kafka.wire import Reader, WireError, Writer
from replog.common.security.files import TlsFiles
from replog.common.security.principal import Principal, principal_of_identities

log = logging.getLogger(__name__)

UNSUPPORTED_VERSION = 35
_SIZE = struct.Struct(">i")
ACCEPT_POLL_S = 0.5
HANDSHAKE_TIMEOUT_S = 10.0
NO_ANSWER = b""


@dataclass(frozen=True)
class Session:
    """Who is on the other end of one connection."""

    principal: Principal | None  # None: a plaintext (insecure) listener
    peer: str
    client_id: str | None = None


Dispatch = Callable[[Session, apis.Api, int, dict], "dict | None"]


class KafkaListener:
    def __init__(self, *, host: str, port: int, tls: TlsFiles | None, dispatch: Dispatch, request_bytes_max: int,
                 connections_max: int, principal_connections_max: int = 0, idle_ms: int = 600_000,
                 super_users: frozenset[str] = frozenset()) -> None:
        self._dispatch = dispatch
        self._request_bytes_max = request_bytes_max
        self._connections_max = connections_max
        self._principal_connections_max = principal_connections_max or max(connections_max // 4, 1)
        self._idle_s = idle_ms / 1000
        self._super_users = super_users
        self._held: dict[str, int] = {}  # principal -> connections it holds now (only while it holds some)
        self._context = _server_context(tls) if tls is not None else None
        self._socket = socket.create_server((host, port), reuse_port=False)
        self._socket.settimeout(ACCEPT_POLL_S)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept_loop, name="kafka-accept", daemon=True)

    @property
    def port(self) -> int:
        return self._socket.getsockname()[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.ident is not None:  # started (a broker stopped while waiting for ZooKeeper never did)
            self._thread.join(timeout=5)
        self._socket.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _close(connection)

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, address = self._socket.accept()
            except socket.timeout:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                raise
            with self._lock:
                full = len(self._connections) >= self._connections_max
                if not full:
                    self._connections.add(connection)
            if full:
                log.warning("Kafka listener: %d connections open, closing one from %s", self._connections_max,
                            address)
                _close(connection)
                continue
            threading.Thread(target=self._serve, args=(connection, f"{address[0]}:{address[1]}"),
                             name="kafka-conn", daemon=True).start()

    def _serve(self, raw: socket.socket, peer: str) -> None:
        connection, held_by = raw, None
        try:
            raw.settimeout(HANDSHAKE_TIMEOUT_S)
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            principal = None
            if self._context is not None:
                connection = self._context.wrap_socket(raw, server_side=True)
                principal = _principal(connection.getpeercert())
                if principal is None:
                    log.warning("Kafka listener: %s presented a certificate without one replog:// identity", peer)
                    return
                held_by = self._hold(str(principal))
                if held_by is None:
                    log.warning("Kafka listener: %s already holds %d connections, the most one identity may "
                                "(kafka_principal_connections_max); closing one from %s", principal,
                                self._principal_connections_max, peer)
                    return
            connection.settimeout(self._idle_s)
            session = Session(principal, peer)
            while not self._stopping.is_set():
                frame = _read_frame(connection, self._request_bytes_max)
                if frame is None:
                    return
                answer = self._answer(session, frame)
                if answer is None:
                    return
                if answer:  # NO_ANSWER is empty
                    connection.sendall(_SIZE.pack(len(answer)) + answer)
        except socket.timeout:
            log.info("Kafka connection from %s closed: no request for %.0f s (or no TLS handshake in %.0f s)",
                     peer, self._idle_s, HANDSHAKE_TIMEOUT_S)
        except (OSError, ssl.SSLError, FrameTooLarge) as exc:
            if not self._stopping.is_set():
                log.info("Kafka connection from %s closed: %s", peer, exc)
        finally:
            with self._lock:
                self._connections.discard(raw)
                if held_by is not None:
                    self._let_go(held_by)
            _close(connection)

    def _hold(self, principal: str) -> str | None:
        """Count a connection of `principal`; None when it holds its most already (super users: no most)."""
        with self._lock:
            held = self._held.get(principal, 0)
            if principal not in self._super_users and held >= self._principal_connections_max:
                return None
            self._held[principal] = held + 1
        return principal

    def _let_go(self, principal: str) -> None:
        """Under the lock: one connection of `principal` ended."""
        left = self._held[principal] - 1
        if left:
            self._held[principal] = left
        else:
            del self._held[principal]

    def _answer(self, session: Session, frame: bytes) -> bytes | None:
        """The answer to one request frame, with its response header; None to close the connection,
        NO_ANSWER when the request takes none."""
        reader = Reader(frame)
        try:
            api_key, version, correlation_id = reader.int16(), reader.int16(), reader.int32()
        except WireError:
            return None
        api = apis.BY_KEY.get(api_key)
        if api is None or not api.min_version <= version <= api.max_version:
            return _unsupported(api, correlation_id)
        flexible = api.flexible(version)
        try:
            client_id = reader.string(compact=False, nullable=True)
            if flexible:
                reader.skip_tagged_fields()
            request = read_struct(reader, api.request, version, flexible)
        except WireError as exc:
            log.info("Kafka %s v%d from %s does not decode: %s", api.name, version, session.peer, exc)
            return None
        try:
            response = self._dispatch(Session(session.principal, session.peer, client_id), api, version, request)
        except Exception:  # noqa: BLE001 - a fault of the listener's: this connection ends, the broker goes on
            log.exception("Kafka %s v%d from %s failed; closing the connection", api.name, version, session.peer)
            return None
        if response is None:
            return NO_ANSWER  # an acks=0 produce
        writer = Writer()
        writer.int32(correlation_id)
        if flexible and api is not apis.API_VERSIONS:  # ApiVersions answers with header v0 in every version
            writer.no_tagged_fields()
        write_struct(writer, api.response, response, version, flexible)
        return bytes(writer.out)


def _unsupported(api: apis.Api | None, correlation_id: int) -> bytes:
    """UNSUPPORTED_VERSION: for ApiVersions (a client newer than this listener) in the v0 layout with the
    offered versions, as Kafka does, so the client retries with one; for any other API the error code
    alone after the header (clients negotiate first, so only a broken one gets here)."""
    writer = Writer()
    writer.int32(correlation_id)
    if api is apis.API_VERSIONS:
        write_struct(writer, api.response, {"error_code": UNSUPPORTED_VERSION, "api_keys": offered()}, 0, False)
    else:
        writer.int16(UNSUPPORTED_VERSION)
    return bytes(writer.out)


def offered() -> list[dict]:
    return [{"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
            for api in apis.ALL]


class FrameTooLarge(Exception):
    pass


def _read_frame(connection, size_max: int) -> bytes | None:
    head = _read_exactly(connection, _SIZE.size)
    if head is None:
        return None
    (size,) = _SIZE.unpack(head)
    if size < 0 or size > size_max:
        raise FrameTooLarge(f"a request of {size} bytes (at most {size_max} are read)")
    return _read_exactly(connection, size)


def _read_exactly(connection, size: int) -> bytes | None:
    parts, left = [], size
    while left:
        chunk = connection.recv(min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _server_context(tls: TlsFiles) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(tls.cert_file, tls.key_file)
    context.load_verify_locations(tls.ca_file)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _principal(certificate: dict | None) -> Principal | None:
    if not certificate:
        return None
    uris = [value for kind, value in certificate.get("subjectAltName", ()) if kind == "URI"]
    return principal_of_identities(uris)


def _close(connection) -> None:
    try:
        connection.close()
    except OSError:
        pass
