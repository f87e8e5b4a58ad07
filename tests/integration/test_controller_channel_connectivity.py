"""The controller's record of which broker channels are connected, against a real gRPC server
on loopback: a request skips the reconnect wait only while grpcio reports the channel READY."""

from __future__ import annotations

from replog.common.channels import ChannelCache
from replog.common.grpc_server import start_server
from replog.controller.adapters.broker_requests import ChannelConnectivity

from tests.integration.controller_helpers import wait_for


def test_a_channel_counts_as_connected_only_while_its_server_serves():
    server = start_server([], host="127.0.0.1", port=0)
    channels = ChannelCache()
    connectivity = ChannelConnectivity()
    try:
        channel = channels.get(f"127.0.0.1:{server.port}")
        assert not connectivity.ready(channel)  # nothing reported yet: the caller waits as before
        wait_for(lambda: connectivity.ready(channel), 5, "the channel reported READY")
        server.stop(0)
        wait_for(lambda: not connectivity.ready(channel), 5, "the channel reported not READY once the server stopped")
    finally:
        channels.close()
        server.stop(0)
