"""Channels from `ChannelCache` against a real gRPC server on loopback: calls made one at a
time do not start a thread each, the keeper calls do not hold the server's threads, keepers
opening while others close never freeze the server, and an idle channel's keepalive pings are
accepted by our servers rather than answered with GOAWAY."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.common.channels import ChannelCache
from replog.common.grpc_connection import KEEPALIVE_TIME_MS
from replog.common.grpc_server import start_server
from tests.integration.controller_helpers import wait_for


def threads_created_so_far() -> int:
    """How many Thread objects this process has made: the number in the next default name."""
    return int(threading.Thread().name.split("-")[1])


def test_sequential_future_calls_reuse_one_call_thread():
    server = start_server([], host="127.0.0.1", port=0)
    channels = ChannelCache()
    try:
        stub = health_pb2_grpc.HealthStub(channels.get(f"127.0.0.1:{server.port}"))
        for _ in range(3):  # connect, and let the keeper start
            stub.Check.future(health_pb2.HealthCheckRequest(), timeout=5).result()
        before = threads_created_so_far()
        for _ in range(20):
            reply = stub.Check.future(health_pb2.HealthCheckRequest(), timeout=5).result()
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        # Without the keeper grpcio starts a thread for each call made while no other is out.
        assert threads_created_so_far() - before <= 2
    finally:
        channels.close()
        server.stop(0)


def test_keepers_hold_no_server_thread():
    server = start_server([], host="127.0.0.1", port=0, max_workers=2)
    caches = [ChannelCache() for _ in range(6)]
    try:
        address = f"127.0.0.1:{server.port}"
        for cache in caches:  # six keepers on a server with two handler threads
            health_pb2_grpc.HealthStub(cache.get(address)).Check(health_pb2.HealthCheckRequest(), timeout=5)
        reply = health_pb2_grpc.HealthStub(caches[0].get(address)).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        for cache in caches:
            cache.close()
        server.stop(0)


def test_a_server_stops_without_waiting_for_its_peers_keepers():
    server = start_server([], host="127.0.0.1", port=0)
    channels = ChannelCache()
    try:
        health_pb2_grpc.HealthStub(channels.get(f"127.0.0.1:{server.port}")).Check(
            health_pb2.HealthCheckRequest(), timeout=5)
        started = time.monotonic()
        server.stop(grace_s=5.0)
        assert time.monotonic() - started < 1.0  # the grace is for real requests, not for keepers
    finally:
        channels.close()


# A server in a process of its own: a frozen one is killed at the end instead of hanging this one's exit.
SERVER_PROCESS = """
import sys
from replog.common.grpc_server import start_server
server = start_server([], host="127.0.0.1", port=0)
print(server.port, flush=True)
sys.stdin.read()
"""


def test_watches_opening_while_others_close_never_freeze_the_server():
    """Peers reconnecting while their old connections close (a network cut healing) open health watches
    as others end. The health library sent a new watch's first status under its lock, waiting for the
    server's event thread, which meanwhile ran an ending watch's callback that takes the same lock: the
    event thread stopped, and the whole server with it (a broker answered nothing after a cut healed).
    Here it happened within a second; the deadlines are room for a loaded machine, not for a freeze."""
    process = subprocess.Popen([sys.executable, "-c", SERVER_PROCESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    done = threading.Event()
    churners = []
    try:
        address = f"127.0.0.1:{int(process.stdout.readline())}"

        def churn():
            while not done.is_set():
                with grpc.insecure_channel(address) as channel:
                    watches = [health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(), timeout=10)
                               for _ in range(5)]
                    for watch in watches:
                        try:
                            next(watch)
                        except grpc.RpcError:
                            pass  # a freeze shows in the checks below
                    for watch in watches:
                        watch.cancel()

        churners = [threading.Thread(target=churn, daemon=True) for _ in range(8)]
        for thread in churners:
            thread.start()
        checks = 0
        with grpc.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            until = time.monotonic() + 3.0
            while time.monotonic() < until:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
                checks += 1
        assert checks > 1
    finally:
        done.set()
        for thread in churners:
            thread.join(timeout=15)
        process.kill()
        process.wait(timeout=10)


def test_a_watch_hears_every_change_of_status():
    server = start_server([], host="127.0.0.1", port=0)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(), timeout=10)
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            server.set_serving(False)
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
            server.set_serving(True)
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            watch.cancel()
    finally:
        server.stop(0)


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
FRAME_PING, FRAME_GOAWAY = 6, 7
FLAG_ACK = 1


class FrameCountingProxy:
    """A TCP proxy in front of a server that counts the HTTP/2 frames going through: the client's
    pings (not acks) and the server's GOAWAYs, and the connections made."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self.client_pings = 0
        self.server_goaways = 0
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(("127.0.0.1", self._target_port))
            except OSError:  # the server stopped
                client.close()
                continue
            self.connections += 1
            self._sockets += [client, server]
            threading.Thread(target=self._relay, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._relay, args=(server, client, False), daemon=True).start()

    def _relay(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        pending = b""
        skip = len(HTTP2_PREFACE) if from_client else 0
        while True:
            try:
                data = source.recv(65536)
                if not data:
                    return
                sink.sendall(data)
            except OSError:
                return
            pending += data
            if skip:
                taken = min(skip, len(pending))
                pending, skip = pending[taken:], skip - taken
            while len(pending) >= 9:
                length, kind, flags = struct.unpack(">I", b"\0" + pending[:3])[0], pending[3], pending[4]
                if len(pending) < 9 + length:
                    break
                pending = pending[9 + length:]
                if from_client and kind == FRAME_PING and not flags & FLAG_ACK:
                    self.client_pings += 1
                elif not from_client and kind == FRAME_GOAWAY:
                    self.server_goaways += 1

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


def test_an_idle_channel_keeps_its_connection_while_it_pings():
    server = start_server([], host="127.0.0.1", port=0)
    proxy = FrameCountingProxy(server.port)
    channels = ChannelCache()
    try:
        health_pb2_grpc.HealthStub(channels.get(f"127.0.0.1:{proxy.port}")).Check(
            health_pb2.HealthCheckRequest(), timeout=5)
        # Idle but for its keeper: it pings, once a KEEPALIVE_TIME_MS without data. A server left at
        # gRPC's defaults answers the third or fourth such ping with GOAWAY "too_many_pings", and the
        # client then pings less often (and not at all on a connection it no longer uses).
        wait_for(lambda: proxy.client_pings >= 6, 10 * KEEPALIVE_TIME_MS / 1000, "six keepalive pings")
        assert proxy.server_goaways == 0
        assert proxy.connections == 1
        reply = health_pb2_grpc.HealthStub(channels.get(f"127.0.0.1:{proxy.port}")).Check(
            health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert proxy.connections == 1
    finally:
        channels.close()
        server.stop(0)
        proxy.close()


def test_a_dropped_channel_is_replaced_by_one_with_a_connection_of_its_own():
    server = start_server([], host="127.0.0.1", port=0)
    proxy = FrameCountingProxy(server.port)
    channels = ChannelCache()
    address = f"127.0.0.1:{proxy.port}"
    try:
        for _ in range(5):  # without use_local_subchannel_pool, a new channel took over the old connection at times
            channel = channels.get(address)
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            channels.drop(address, channel)
        assert proxy.connections == 5
        current = channels.get(address)
        channels.drop(address, channel)  # a channel dropped before: the current one stays
        assert channels.get(address) is current
    finally:
        channels.close()
        server.stop(0)
        proxy.close()


def test_watches_of_made_up_services_leave_nothing_behind():
    """A health watch of a service the server does not serve answers SERVICE_UNKNOWN and is remembered
    nowhere; a served one's entry goes once its last watch ends (review finding: every distinct service
    string was kept for good)."""
    server = start_server([], host="127.0.0.1", port=0)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            watches = [stub.Watch(health_pb2.HealthCheckRequest(service=f"made-up-{i}")) for i in range(200)]
            served = stub.Watch(health_pb2.HealthCheckRequest(service=""))
            assert next(watches[0]).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
            assert next(served).status == health_pb2.HealthCheckResponse.SERVING
            for watch in watches + [served]:
                watch.cancel()
            wait_for(lambda: not server.health._send_response_callbacks, 10, "every watch to be forgotten")
        assert not any(name.startswith("made-up") for name in server.health._server_status)
    finally:
        server.stop(0)
