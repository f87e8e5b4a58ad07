"""A cache of gRPC channels keyed by address, and default deadlines.

Channels are expensive to build and cheap to share; every outbound call in a
process goes through one `ChannelCache`, so a broker has one connection per peer.

Each channel also carries one long-lived call, a health `Watch` of the peer
(its "keeper"). grpcio runs a channel's future and callback calls on a thread
that lives only while such a call is open, so a caller with one call in flight
at a time (a replica fetcher, a producer) would start a thread per call; the
keeper keeps that thread alive (docs/perf/channel-keeper.md). Our servers answer
`Watch` without holding a handler thread (grpc_server.py). A keeper that ended
(the peer went away) is started again by the next `get`, at most once a second.

With TLS files (security/), channels are mutual TLS with this process's certificate. When the
files change on disk, the next `get` of each address builds a new channel with the new
certificate and closes the old one (its calls in flight fail and are retried like any other).
"""

from __future__ import annotations

import threading
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.common.grpc_connection import KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS, MESSAGE_BYTES_MAX
from replog.common.security.credentials import ChannelCredentialsSource
from replog.common.security.files import TlsFiles

CONNECT_TIMEOUT_MS = 1500  # how long one connection attempt may take (a link of up to about 300 ms one way)

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MESSAGE_BYTES_MAX),
    ("grpc.max_send_message_length", MESSAGE_BYTES_MAX),
    ("grpc.enable_retries", 0),
    # Reconnect quickly after a peer restarts (default backoff reaches 120 s).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # Not a back-off despite its name: gRPC gives each connection attempt the longer of this and the
    # current back-off to finish. Setting one up (TCP, the TLS handshake, HTTP/2's settings) takes about
    # four one-way trips, so at 100 ms (the back-off's floor) a peer 300 ms away was never connected to.
    # A refused connection still fails at once; one into a black hole is given up after this.
    ("grpc.min_reconnect_backoff_ms", CONNECT_TIMEOUT_MS),
    # Find a dead connection in seconds: a peer behind a network cut sends nothing back, not even a
    # reset. A ping unanswered for KEEPALIVE_TIMEOUT_MS closes the connection, every call on it fails
    # at once and gRPC reconnects (the back-off above). A ping a second per peer costs next to nothing;
    # a busy peer gets twice that to answer (any bytes arriving count). Our servers allow these pings
    # (grpc_server.py). What it gained: docs/perf/keepalive.md.
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),  # an idle connection can die too
    ("grpc.http2.max_pings_without_data", 0),  # no limit: an idle connection would stop pinging after 2
    # A channel of its own connection: a channel built to replace one whose connection is suspect
    # (ChannelCache.drop) must not share the old one's, as channels with equal options otherwise do.
    ("grpc.use_local_subchannel_pool", 1),
]

# Default deadlines, seconds.
CONTROL_RPC_TIMEOUT_S = 10.0
ADMIN_RPC_TIMEOUT_S = 30.0

KEEPER_RESTART_S = 1.0  # a keeper that ended is started again at most this often


class _Keeper:
    """The long-lived call that keeps a channel's call thread running (see the module docstring)."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._channel = channel
        self._call = None
        self._started_s = float("-inf")
        self.refresh()

    def refresh(self) -> None:
        """Start the watch again if it ended (and it was not started within KEEPER_RESTART_S)."""
        now = time.monotonic()
        if (self._call is None or self._call.done()) and now - self._started_s >= KEEPER_RESTART_S:
            self._started_s = now
            self._call = health_pb2_grpc.HealthStub(self._channel).Watch(health_pb2.HealthCheckRequest())

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()


class ChannelCache:
    def __init__(self, tls: TlsFiles | None = None) -> None:
        """Plaintext channels without `tls`; mutual TLS with its certificate otherwise."""
        self._lock = threading.Lock()
        self._channels: dict[str, tuple[grpc.Channel, _Keeper, int]] = {}
        self._credentials = ChannelCredentialsSource(tls) if tls is not None else None

    def get(self, address: str) -> grpc.Channel:
        stale = None
        with self._lock:
            entry = self._channels.get(address)
            credentials, generation = self._credentials.current() if self._credentials else (None, 0)
            if entry is not None and entry[2] != generation:
                stale, entry = entry, None  # built with certificate files replaced since
            if entry is None:
                channel = (grpc.insecure_channel(address, options=CHANNEL_OPTIONS) if credentials is None
                           else grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS))
                entry = self._channels[address] = (channel, _Keeper(channel), generation)
            else:
                entry[1].refresh()
        if stale is not None:
            _close(stale)
        return entry[0]

    def drop(self, address: str, channel: grpc.Channel | None = None) -> None:
        """Close the channel to `address`; the next `get` builds a new one, with a connection of its own.

        With `channel`, only if that is still the one cached: two users that found the same
        connection dead close it once, not the first one's replacement too."""
        with self._lock:
            entry = self._channels.get(address)
            if entry is None or (channel is not None and entry[0] is not channel):
                return
            del self._channels[address]
        _close(entry)

    def close(self) -> None:
        with self._lock:
            entries, self._channels = list(self._channels.values()), {}
        for entry in entries:
            _close(entry)


def _close(entry: tuple[grpc.Channel, _Keeper, int]) -> None:
    channel, keeper, _ = entry
    keeper.cancel()
    channel.close()
