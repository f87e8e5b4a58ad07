"""Loopback ports for a local cluster's processes, chosen once and never handed out twice."""

from __future__ import annotations

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


def free_port() -> int:
    """A loopback port nobody listens on, never handed out twice by this process.

    Ports come from below the kernel's ephemeral range: a planned port is bound only when its
    process starts (and again on every restart), and in between an outgoing connection of any
    process could be given an ephemeral port -- the very one a bind(0) probe returned.
    """
    low, _ = _ephemeral_range()
    rng = random.Random()
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

