"""A follower's ReplicaFetchStream against a leader's real ReplicationServicer over loopback gRPC:
requests answered in turn, a stream that gets no answer in time is ended by the follower, and a
stopping leader ends its idle streams instead of waiting out its graceful stop for them."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from prometheus_client import CollectorRegistry

from replog.broker.entrypoints.replication_servicer import ReplicationServicer
from replog.broker.replication.fetch_stream import FetchStream, StreamEnded
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.turn import Turn
from replog.common.channels import ChannelCache
from replog.common.clock import SystemClock
from replog.common.grpc_server import ServiceBinding, start_server
from replog.v1 import common_pb2, replication_pb2, replication_pb2_grpc

from .controller_helpers import wait_for


@pytest.fixture
def leader():
    clock = SystemClock()
    stopping = {"now": False}
    servicer = ReplicationServicer(
        broker_id=1, lookup=lambda tp: None, clock=clock, metrics=BrokerMetrics(CollectorRegistry()),
        fetch_bytes_max=1 << 20, stopping=lambda: stopping["now"], turn=Turn())
    server = start_server([ServiceBinding("replog.v1.ReplicationService",
                                          replication_pb2_grpc.add_ReplicationServiceServicer_to_server, servicer)],
                          host="127.0.0.1", port=0)
    channels = ChannelCache()
    yield servicer, server, channels.get(f"127.0.0.1:{server.port}"), stopping
    channels.close()
    server.stop(0)


def open_session(max_wait_ms: int = 0, epoch: int = 0, session_id: int = 0) -> replication_pb2.ReplicaFetchRequest:
    return replication_pb2.ReplicaFetchRequest(replica_id=2, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                                               session_id=session_id, session_epoch=epoch)


def test_requests_on_one_stream_are_answered_in_turn(leader):
    _, _, channel, _ = leader
    stream = FetchStream(channel)
    try:
        opened = stream.exchange(open_session(), timeout_s=5)
        assert opened.error_code == 0 and opened.session_id > 0
        # The session goes on over the same stream, one epoch at a time; out of sequence is refused.
        second = stream.exchange(open_session(epoch=1, session_id=opened.session_id), timeout_s=5)
        assert second.error_code == 0 and second.session_id == opened.session_id
        skipped = stream.exchange(open_session(epoch=5, session_id=opened.session_id), timeout_s=5)
        assert skipped.error_code == common_pb2.ERROR_CODE_INVALID_FETCH_SESSION_EPOCH
    finally:
        stream.cancel()


def test_a_stream_without_an_answer_in_time_is_cancelled_by_the_follower(leader):
    _, _, channel, _ = leader
    stream = FetchStream(channel)
    opened = stream.exchange(open_session(), timeout_s=5)
    started = time.monotonic()
    with pytest.raises(grpc.RpcError):
        # The leader long-polls 10 s on a session with nothing in it; the follower gave it 0.2 s.
        stream.exchange(open_session(max_wait_ms=10_000, epoch=1, session_id=opened.session_id), timeout_s=0.2)
    assert stream.timed_out
    assert time.monotonic() - started < 3


def test_a_stopping_leader_ends_idle_streams_at_once(leader):
    servicer, server, channel, stopping = leader
    stream = FetchStream(channel)
    stream.exchange(open_session(), timeout_s=5)  # open, answered, and now idle on the leader
    stopping["now"] = True
    started = time.monotonic()
    servicer.end_streams()
    server.stop(5)
    assert time.monotonic() - started < 1.5  # not the 5 s grace
    # The stream is over either way the follower may learn it: CANCELLED, or ended with OK when the
    # handler saw its requests end first (StreamEnded; once in a fresh-clone suite run). The fetcher
    # takes both alike and opens another stream.
    with pytest.raises((grpc.RpcError, StreamEnded)):
        stream.exchange(open_session(), timeout_s=5)
    stream.cancel()


def test_finished_streams_leave_no_thread_behind(leader):
    _, _, channel, _ = leader
    first = FetchStream(channel)
    first.exchange(open_session(), timeout_s=5)  # let the channel and its threads settle
    settled = set(threading.enumerate())
    first.cancel()
    for _ in range(10):
        stream = FetchStream(channel)
        stream.exchange(open_session(), timeout_s=5)
        stream.cancel()

    def left_behind() -> list[str]:
        # The test server's own handler pool ("grpc_N") may grow by a thread and keeps it.
        return [t.name for t in threading.enumerate() if t not in settled and not t.name.startswith("grpc_")]

    # Each stream's request feeder ends with its stream.
    wait_for(lambda: not left_behind(), 5, "the threads the streams started to end")
