"""What every service's `main` does around its own work: load config, set up
logging, turn known start-up failures into a one-line reason and an exit
code, and wait for SIGTERM/SIGINT.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Callable, TypeVar

from replog.common.config import ConfigError, _UsageError

T = TypeVar("T")


class StartupError(RuntimeError):
    """The service cannot start: the message says why, in one line."""


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def run(prog: str, body: Callable[[], int | None]) -> int:
    """Run `body`, mapping configuration and start-up failures to one line on stderr."""
    from replog.common.zk.client import ZkUnavailableError

    try:
        return body() or EXIT_OK
    except _UsageError as exc:
        print(f"{prog}: error: {exc} (see {prog} --help)", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"{prog}: bad configuration: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (StartupError, ZkUnavailableError, OSError) as exc:
        print(f"{prog}: cannot start: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_OK


class StopSignal:
    """Set by SIGTERM or SIGINT; services wait on it and then shut down cleanly."""

    def __init__(self) -> None:
        self.event = threading.Event()
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame) -> None:
        self.event.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        return self.event.wait(timeout_s)
