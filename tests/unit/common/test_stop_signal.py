"""StopSignal: SIGTERM/SIGINT wake a service's main thread, which never parks in an untimed wait."""

from __future__ import annotations

import os
import signal
import threading
import time

from replog.common.service import StopSignal


def test_a_signal_sent_while_other_threads_run_is_handled_promptly():
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        stop = StopSignal()
        busy = threading.Event()
        threads = [threading.Thread(target=busy.wait, args=(5,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        threading.Timer(0.1, os.kill, args=(os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        assert stop.wait()
        assert time.monotonic() - started < 2
        busy.set()
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])


def test_wait_with_a_timeout_returns_false_when_nothing_came():
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        started = time.monotonic()
        assert StopSignal().wait(0.3) is False
        assert 0.25 < time.monotonic() - started < 1.5
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
