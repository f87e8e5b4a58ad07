"""Loopback ports for a local cluster's processes, chosen once and never handed out twice.

`REPLOG_PORT_RANGE=LOW-HIGH` keeps this process's choices inside [LOW, HIGH): two test runs on one
machine given disjoint ranges never pick a port the other planned but has not bound yet (the suite
runs its integration and fault tiers side by side this way, tests/run.sh).
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

_handed_out: set[int] = set()
_LOWEST_PORT = 10_000


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _planned_range() -> tuple[int, int] | None:
    spec = os.environ.get("REPLOG_PORT_RANGE", "")
    if not spec:
        return None
    try:
        low, high = (int(part) for part in spec.split("-"))
    except ValueError:
        raise ValueError(f"REPLOG_PORT_RANGE={spec!r}: expected LOW-HIGH, for example 10000-20000") from None
    if not 1024 <= low < high <= 65536 or high - low < 100:
        raise ValueError(f"REPLOG_PORT_RANGE={spec!r}: expected 1024 <= LOW < HIGH <= 65536, at least 100 ports")
    return low, high


def free_port() -> int:
    """A loopback port nobody listens on, never handed out twice by this process.

    Ports come from below the kernel's ephemeral range: a planned port is bound only when its
    process starts (and again on every restart), and in between an outgoing connection of any
    process could be given an ephemeral port -- the very one a bind(0) probe returned.
    """
    rng = random.Random()
    planned = _planned_range()
    if planned is not None:
        for _ in range(1000):
            port = rng.randrange(*planned)
            if port not in _handed_out and _bindable(port):
                _handed_out.add(port)
                return port
        raise RuntimeError(f"no free port left in REPLOG_PORT_RANGE={planned[0]}-{planned[1]}")
    low, _ = _ephemeral_range()
    if low - _LOWEST_PORT >= 1000:
        for _ in range(200):
            port = rng.randrange(_LOWEST_PORT, low)
            if port not in _handed_out and _bindable(port):
                _handed_out.add(port)
                return port
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port

