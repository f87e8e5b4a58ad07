"""A stopping server's long-lived streams are ended, including one that reaches its handler late."""

from __future__ import annotations

from replog.common.grpc_server import OpenStreams


class FakeContext:
    def __init__(self) -> None:
        self.cancelled = False
        self.callbacks = []

    def cancel(self) -> None:
        self.cancelled = True

    def add_callback(self, callback) -> None:
        self.callbacks.append(callback)


def test_open_streams_are_cancelled_and_ended_ones_forgotten():
    streams = OpenStreams()
    open_one, ended = FakeContext(), FakeContext()
    streams.track(open_one)
    streams.track(ended)
    for callback in ended.callbacks:
        callback()  # the RPC ended by itself
    streams.cancel_all()
    assert open_one.cancelled and not ended.cancelled


def test_a_stream_reaching_its_handler_after_the_stop_is_cancelled_at_once():
    # A peer's keeper Watch sent just before the stop now and then reached the servicer after
    # cancel_all, and held the server's graceful stop for its whole grace period.
    streams = OpenStreams()
    streams.cancel_all()
    late = FakeContext()
    streams.track(late)
    assert late.cancelled and not late.callbacks
