"""What every service's `main` does around its own work: load config, set up
logging, turn known start-up failures into a one-line reason and an exit
code, and wait for SIGTERM/SIGINT.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Callable, TypeVar

from replog.common import cpu_scheduling, gc_policy, grpc_runtime
from replog.common.config import ConfigError, _UsageError

T = TypeVar("T")


class StartupError(RuntimeError):
    """The service cannot start: the message says why, in one line."""


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def run(prog: str, body: Callable[[], int | None]) -> int:
    """Run `body`, mapping configuration and start-up failures to one line on stderr. gRPC's
    runtime settings are made first, before anything the body imports loads grpc (grpc_runtime.py),
    and the CPU scheduling policy before any thread starts, so that every thread has it
    (cpu_scheduling.py); the garbage collector's settings too (gc_policy.py)."""
    grpc_runtime.configure()
    try:
        cpu_scheduling.configure()
        gc_policy.configure()
        return body() or EXIT_OK
    except _UsageError as exc:
        print(f"{prog}: error: {exc} (see {prog} --help)", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"{prog}: bad configuration: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (StartupError, OSError) as exc:
        print(f"{prog}: cannot start: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_OK


def raise_open_files_limit(wanted: int = 1_048_576) -> int:
    """Raise RLIMIT_NOFILE towards `wanted` (a broker's logs hold one descriptor per
    busy replica, up to a budget derived from this limit); returns the soft limit in force.

    The soft limit goes up to the hard one; as root the hard one goes up too
    (bounded by the kernel's fs.nr_open).
    """
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else max(hard, wanted)
    try:
        with open("/proc/sys/fs/nr_open") as handle:
            target = min(target, int(handle.read()))
    except (OSError, ValueError):
        pass
    for new_soft, new_hard in ((target, max(hard, target) if hard != resource.RLIM_INFINITY else hard),
                               (hard if hard != resource.RLIM_INFINITY else target, hard)):
        if new_soft <= soft:
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, new_hard))
            return new_soft
        except (ValueError, OSError):
            continue
    return soft


SIGNAL_POLL_S = 0.2


class StopSignal:
    """Set by SIGTERM or SIGINT; services wait on it and then shut down cleanly."""

    def __init__(self) -> None:
        self.event = threading.Event()
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame) -> None:
        self.event.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the signal, waking every 0.2 s.

        Python runs signal handlers only in the main thread, between bytecodes. When the
        kernel delivers SIGTERM to another thread (a broker has dozens), a main thread
        parked in an untimed wait never wakes to run the handler, and the process is killed
        without its controlled shutdown. Short waits bound that.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            step = SIGNAL_POLL_S if deadline is None else min(SIGNAL_POLL_S, max(deadline - time.monotonic(), 0))
            if self.event.wait(step):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
