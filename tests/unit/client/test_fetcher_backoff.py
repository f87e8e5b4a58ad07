"""A consumer whose leader stopped answering and whose metadata cannot be refreshed (the whole cluster gone)
asks again at the retry backoff's pace, not as fast as the calls can fail."""

from __future__ import annotations

import threading
import time

import grpc

from replog.client.fetcher import Fetcher
from replog.common.core.partitions import TopicPartition

BACKOFF_S = 0.1
WINDOW_S = 1.0


class FailedCall(grpc.RpcError, grpc.Future):
    """A call that failed at once, as one to an address where nothing listens does."""

    def result(self, timeout=None):
        raise self

    def add_done_callback(self, fn):
        fn(self)

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def cancel(self):
        return False

    def cancelled(self):
        return False

    def running(self):
        return False

    def done(self):
        return True

    def exception(self, timeout=None):
        return self

    def traceback(self, timeout=None):
        return None


class GoneCluster:
    """Metadata that still names a leader, whose every call fails, and that no broker refreshes."""

    def __init__(self) -> None:
        self.calls = 0
        self.refreshes = 0
        self._lock = threading.Lock()
        outer = self

        class Method:
            def future(self, request, timeout=None):
                with outer._lock:
                    outer.calls += 1
                return FailedCall()

        class Stub:
            Fetch = Method()
            OffsetsForLeaderEpochs = Method()

        self._stub = Stub()

    def leader_address(self, topic, partition):
        return ("127.0.0.1:1", 4)

    def mark_unreachable(self, address):
        pass

    def stub(self, address):
        return self._stub

    def refresh(self, topics):
        with self._lock:
            self.refreshes += 1
        raise ConnectionError("no broker answered")


def test_a_gone_cluster_is_asked_at_the_backoffs_pace():
    cluster = GoneCluster()
    fetcher = Fetcher(cluster, fetch_max_bytes=1 << 20, max_wait_ms=500, buffer_bytes_max=1 << 20,
                      retry_backoff_s=BACKOFF_S, metadata_max_age_s=300)
    fetcher.seek(TopicPartition("t", 0), 0)
    fetcher.start()
    try:
        deadline = time.monotonic() + 10
        while cluster.calls < 2:
            assert time.monotonic() < deadline, "the fetcher never tried the leader"
            time.sleep(0.01)
        calls, refreshes, started = cluster.calls, cluster.refreshes, time.monotonic()
        threading.Event().wait(WINDOW_S)  # a measured window, not a wait for a condition
        window_s = time.monotonic() - started
        most = window_s / BACKOFF_S + 2
        assert cluster.calls - calls <= most, f"{cluster.calls - calls} calls in {window_s:.2f} s"
        assert cluster.refreshes - refreshes <= most, f"{cluster.refreshes - refreshes} refreshes in {window_s:.2f} s"
    finally:
        fetcher.close()
