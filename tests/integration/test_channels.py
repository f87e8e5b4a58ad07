"""Channels from `ChannelCache` against a real gRPC server on loopback: calls made one at a
time do not start a thread each, and the keeper calls do not hold the server's threads."""

from __future__ import annotations

import threading
import time

from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.common.channels import ChannelCache
from replog.common.grpc_server import start_server


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
