"""How gRPC core runs in replog's processes: the one owner of `GRPC_EXPERIMENTS`.

Since grpcio 1.6x, gRPC core moves every connection's bytes on threads of its
own (EventEngine); a message that arrives is read on such a thread and then
handed to the thread waiting on the completion queue (the server's poller, a
channel's spin thread), which hands it to the handler. The older transport
(iomgr) lets the thread that waits on the completion queue read the socket
itself: one thread hop fewer per message, in each direction. A replicated
acks=all write is six stream messages on the leader (docs/architecture.md, "An acks=all produce"), so the hop
is paid many times per write.

Measured on this 2-core machine (grpcio 1.85), one 10 kB message out and its
echo back over an open stream between two processes (bench/produce.py's
round-trip floor): p50 0.36 ms with EventEngine, 0.27 ms with only the client
or only the listener side off, 0.24 ms with both off. The acks=all chain floor
(bench/floor_chain.py) went from p99 2.5 to 1.4 ms, and `bench/produce.py
--acks all --rate-mb-per-s 10` from a median p99 of 8.47 to 5.92 ms over five
alternated pairs (issue 3's note). Turning off `event_engine_for_all_other_endpoints`
or `event_engine_callback_cq` as well made no difference, so they stay on.

gRPC reads the variable once, when it is first imported, so `configure` must
run before anything in the process imports grpc: `service.run` calls it first
thing in every service, and the benchmarks whose own process is on the measured
path call it before their imports. The processes a configured process starts
inherit the setting. An operator who sets `GRPC_EXPERIMENTS` themselves keeps
their value. The client library does not set it: it is the host program's
process, and its choice (call `configure()` before importing grpc to opt in).
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
