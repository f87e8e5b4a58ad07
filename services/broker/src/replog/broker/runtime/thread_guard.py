"""What a background thread does with an exception it did not expect.

A broken invariant (AssertionError) stops the process, as everywhere in replog:
a thread that dies quietly would leave a broker that looks alive but no longer
replicates. Anything else is logged with its traceback and the loop goes on
after a pause, so one bad round does not end replication for good.
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)

EXIT_INVARIANT_BROKEN = 70
PAUSE_AFTER_ERROR_S = 1.0


def guarded_round(round_fn, pause: threading.Event | None = None) -> None:
    """Run one round of a background loop under the rules above."""
    try:
        round_fn()
    except AssertionError:
        log.critical("invariant broken in thread %s; stopping the process", threading.current_thread().name,
                     exc_info=True)
        logging.shutdown()
        os._exit(EXIT_INVARIANT_BROKEN)
    except Exception:  # noqa: BLE001 - logged, and the loop continues
        log.exception("unexpected error in thread %s; continuing after a pause", threading.current_thread().name)
        (pause or threading.Event()).wait(PAUSE_AFTER_ERROR_S)
