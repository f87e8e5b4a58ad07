"""How gRPC core runs in replog's processes: the one owner of `GRPC_EXPERIMENTS`.

replog turns off EventEngine's client and listener (`VALUE`), so the thread waiting on the
completion queue reads the socket itself (gRPC's older iomgr transport) instead of taking
each message from an EventEngine thread: one thread hop fewer per message, in each
direction, and an acks=all write is several stream messages on the leader. The measurements,
and why the other EventEngine experiments stay on: docs/perf/eventengine-off.md.

gRPC reads the variable once, when it is first imported, so `configure` must run before
anything in the process imports grpc: `service.run` calls it first thing in every service,
and the benchmarks whose own process is on the measured path call it before their imports.
The processes a configured process starts inherit the setting. An operator who sets
`GRPC_EXPERIMENTS` themselves keeps their value. The client library does not set it: it is
the host program's process, and its choice (call `configure()` before importing grpc to
opt in).
"""

from __future__ import annotations

import logging
import os
import sys

ENV = "GRPC_EXPERIMENTS"
EXPERIMENTS_OFF = ("event_engine_client", "event_engine_listener")
VALUE = ",".join(f"-{name}" for name in EXPERIMENTS_OFF)

log = logging.getLogger(__name__)


def configure() -> bool:
    """Set replog's gRPC experiments for this process (unless the environment already names some)
    and the processes it starts. Returns whether this process runs with replog's value: False if
    the operator's value stands, or if this call sets it after grpc was imported (then it applies
    to the children only). A value already in the environment was there when grpc loaded."""
    present = os.environ.get(ENV)
    if present is not None:  # set before grpc could load (by our parent, an earlier call or the operator)
        return present == VALUE
    os.environ[ENV] = VALUE
    if "grpc" in sys.modules:
        log.warning("grpc was imported before replog's gRPC settings were made; they apply to the "
                    "processes this one starts, not to itself")
        return False
    return True
