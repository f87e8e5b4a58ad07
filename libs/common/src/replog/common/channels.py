"""A cache of gRPC channels keyed by address, and default deadlines.

Channels are expensive to build and cheap to share; every outbound call in a
process goes through one `ChannelCache`, so a broker has one connection per peer.
"""

from __future__ import annotations

import threading

import grpc

from replog.common.grpc_server import MESSAGE_BYTES_MAX

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MESSAGE_BYTES_MAX),
    ("grpc.max_send_message_length", MESSAGE_BYTES_MAX),
    ("grpc.enable_retries", 0),
    # Reconnect quickly after a peer restarts (default backoff reaches 120 s).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.min_reconnect_backoff_ms", 100),
]

# Default deadlines, seconds.
CONTROL_RPC_TIMEOUT_S = 10.0
ADMIN_RPC_TIMEOUT_S = 30.0


class ChannelCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}

    def get(self, address: str) -> grpc.Channel:
        with self._lock:
            channel = self._channels.get(address)
            if channel is None:
                channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
                self._channels[address] = channel
            return channel

    def drop(self, address: str) -> None:
        with self._lock:
            channel = self._channels.pop(address, None)
        if channel is not None:
            channel.close()

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()
