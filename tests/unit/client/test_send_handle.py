"""The producer's per-record handle behaves like the Future it replaces."""

from __future__ import annotations

import threading

import pytest

from replog.client.results import BatchOutcome, ProduceError, RecordMetadata, SendHandle
from replog.v1 import common_pb2


def test_handles_share_their_batch_outcome_and_get_their_own_offset():
    outcome = BatchOutcome("t", 2)
    first, third = SendHandle(outcome, 0), SendHandle(outcome, 2)
    assert not first.done()
    with pytest.raises(TimeoutError):
        first.result(timeout=0.01)
    threading.Thread(target=outcome.finish, args=(40, None)).start()
    assert third.result(timeout=10) == RecordMetadata("t", 2, 42)
    assert first.result() == RecordMetadata("t", 2, 40) and first.exception() is None and first.done()


def test_callbacks_run_once_answered_or_at_once_when_already():
    outcome = BatchOutcome("t", 0)
    seen = []
    SendHandle(outcome, 1).add_done_callback(lambda h: seen.append(("early", h.result().offset)))
    SendHandle(outcome, 0).add_done_callback(lambda h: 1 / 0)  # a failing callback stops nothing
    outcome.finish(10, None)
    SendHandle(outcome, 0).add_done_callback(lambda h: seen.append(("late", h.result().offset)))
    assert seen == [("early", 11), ("late", 10)]


def test_a_failed_batch_raises_its_error_from_every_handle():
    outcome = BatchOutcome("t", 0)
    outcome.finish(-1, ProduceError(common_pb2.ERROR_CODE_REQUEST_TIMED_OUT, "gone"))
    handle = SendHandle(outcome, 3)
    assert isinstance(handle.exception(), ProduceError)
    with pytest.raises(ProduceError, match="REQUEST_TIMED_OUT: gone"):
        handle.result()
