"""The controller's record of which broker channels are connected, against a real gRPC server
on loopback: a request skips the reconnect wait only while grpcio reports the channel READY, and
fails at once to a broker whose last request failed in transit while it is still not connected."""

from __future__ import annotations

import socket
import time
from types import SimpleNamespace

from replog.common.channels import ChannelCache
from replog.common.grpc_server import start_server
from replog.controller.adapters.broker_requests import RECONNECT_WAIT_S, BrokerRequestSender, ChannelConnectivity
from replog.controller.core.model import BrokerInfo
from replog.controller.core.plan import UpdateMetadata
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


def test_a_broker_that_stays_unreachable_does_not_hold_the_next_wave():
    """A broker behind a network cut stays registered until its session expires; the controller's
    loop waits for every broker's answer. The first request to it waits out the reconnect and fails
    in transit; while its channel is still not connected, the next wave fails at once (the loop
    resyncs it later), rather than holding the decisions behind it -- the election that replaces
    that broker among them (issue 39, an isolated leader)."""
    black_hole = socket.create_server(("127.0.0.1", 0))  # accepts TCP, never answers HTTP/2: a cut peer
    channels = ChannelCache()
    sender = BrokerRequestSender(channels, controller_id=1, controller_epoch=1)
    broker = BrokerInfo(broker_id=1, host="127.0.0.1", port=black_hole.getsockname()[1], broker_epoch=7)
    state = SimpleNamespace(live_brokers={1: broker})
    wave = UpdateMetadata(broker_ids=(1,), live_brokers=(broker,), partitions=(), deleted_topics=(), full=False)
    try:
        timings = []
        for _ in range(2):
            started = time.monotonic()
            outcome = sender.start(state, update_metadata=[wave])[1].result(timeout=30)
            timings.append(time.monotonic() - started)
            assert outcome.transport_failed and not outcome.ok, outcome
        assert timings[0] >= RECONNECT_WAIT_S, f"the first request did not wait for a reconnect: {timings}"
        assert timings[1] < RECONNECT_WAIT_S / 2, f"the second wave waited on the unreachable broker: {timings}"
    finally:
        sender.close()
        channels.close()
        black_hole.close()
