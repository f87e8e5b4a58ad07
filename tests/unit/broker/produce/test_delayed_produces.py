"""Delayed produces complete on events, expire on time, and release everyone on shutdown."""

from __future__ import annotations

import threading
import time

from replog.broker.core.errors import ErrorCode
from replog.broker.core.produce.produce import ProduceProgress, ProduceWait
from replog.broker.produce.delayed_produces import DelayedProduces
from replog.common.clock import SystemClock
from replog.common.core.partitions import TopicPartition
from tests.unit.broker.thread_helpers import wait_for

TP = TopicPartition("t", 0)


class Progress:
    def __init__(self) -> None:
        self.high_watermark = 0

    def __call__(self, tp: TopicPartition) -> ProduceProgress:
        return ProduceProgress(is_leader=True, leader_epoch=3, high_watermark=self.high_watermark, isr_size=2,
                               leading_since_epoch=3)


def wait_in_thread(delayed: DelayedProduces, timeout_ms: int):
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("results", delayed.wait(
        [ProduceWait(TP, 3, 0, 4, 2)], timeout_ms)))
    thread.start()
    return thread, box


def test_delayed_produce_completes_when_the_hw_passes_it():
    progress = Progress()
    delayed = DelayedProduces(progress, SystemClock())
    thread, box = wait_in_thread(delayed, 10_000)
    wait_for(lambda: len(delayed) == 1, "the produce to wait")
    progress.high_watermark = 3
    delayed.check(TP)
    assert thread.is_alive() and len(delayed) == 1
    progress.high_watermark = 5
    delayed.check(TP)
    thread.join(2)
    assert [r.error_code for r in box["results"]] == [ErrorCode.NONE] and len(delayed) == 0


def test_delayed_produce_times_out_and_close_releases_waiters():
    delayed = DelayedProduces(Progress(), SystemClock())
    started = time.monotonic()
    (result,) = delayed.wait([ProduceWait(TP, 3, 0, 4, 2)], 100)
    assert result.error_code is ErrorCode.REQUEST_TIMED_OUT and 0.09 < time.monotonic() - started < 2
    thread, box = wait_in_thread(delayed, 60_000)
    wait_for(lambda: len(delayed) == 1, "the produce to wait")
    delayed.close()
    thread.join(2)
    assert box["results"][0].error_code is ErrorCode.REQUEST_TIMED_OUT


def test_a_parked_produce_answers_its_callback_once_from_the_thread_that_moves_the_hw():
    progress = Progress()
    delayed = DelayedProduces(progress, SystemClock())
    answers = []
    delayed.park([ProduceWait(TP, 3, 0, 4, 2)], 10_000, answers.append)
    assert answers == [] and len(delayed) == 1  # parked; nothing blocked
    progress.high_watermark = 5
    delayed.check(TP)
    delayed.check(TP)
    delayed.expire_due()
    assert [[r.error_code for r in results] for results in answers] == [[ErrorCode.NONE]] and len(delayed) == 0


def test_a_parked_produce_that_can_complete_at_once_is_answered_before_park_returns():
    progress = Progress()
    progress.high_watermark = 5
    delayed = DelayedProduces(progress, SystemClock())
    answers = []
    delayed.park([ProduceWait(TP, 3, 0, 4, 2)], 10_000, answers.append)
    assert [results[0].error_code for results in answers] == [ErrorCode.NONE] and len(delayed) == 0


def test_a_parked_produce_expires_only_once_its_deadline_passed_and_close_answers_the_rest():
    delayed = DelayedProduces(Progress(), SystemClock())
    answers = []
    deadline_ms = delayed.park([ProduceWait(TP, 3, 0, 4, 2)], 50, answers.append)
    delayed.park([ProduceWait(TP, 3, 5, 9, 2)], 60_000, answers.append)
    delayed.expire_due()
    assert answers == []  # not due yet: the caller keeps the clock
    wait_for(lambda: SystemClock().monotonic_ms() > deadline_ms, "the first produce's deadline to pass")
    delayed.expire_due()
    assert [results[0].error_code for results in answers] == [ErrorCode.REQUEST_TIMED_OUT]
    delayed.close()
    assert [results[0].error_code for results in answers] == [ErrorCode.REQUEST_TIMED_OUT] * 2 and len(delayed) == 0
