"""Expire another process's ZooKeeper session from outside, as ZooKeeper itself would.

A service does not expose its session, and needs not: its ephemeral znode names the session that
owns it (`ephemeralOwner`), and ZooKeeper derives a session's password from its id alone
(`ZooKeeperServer.generatePasswd`: 16 bytes of `java.util.Random(id ^ 0xB3415C00)`). A second
client that connects with that id and password takes the session over, and closing it ends the
session on the server: the service's own connection then learns SESSION_EXPIRED, exactly as after
a long network cut. ZooKeeper's own test suite uses the same takeover-and-close to expire sessions.
"""

from __future__ import annotations

from kazoo.client import KazooClient

from replog.common.zk.auth import ZkEndpoint

SUPER_SECRET = 0xB3415C00
_MULTIPLIER = 0x5DEECE66D
_MASK_48 = (1 << 48) - 1


def session_password(session_id: int) -> bytes:
    """The password ZooKeeper gives session `session_id` (java.util.Random's nextBytes, 16 bytes)."""
    seed = ((session_id ^ SUPER_SECRET) ^ _MULTIPLIER) & _MASK_48
    out = bytearray()
    while len(out) < 16:
        seed = (seed * _MULTIPLIER + 0xB) & _MASK_48
        word = seed >> 16  # next(32), as an unsigned 32-bit value
        for _ in range(min(4, 16 - len(out))):
            out.append(word & 0xFF)
            word >>= 8
    return bytes(out)


def expire_session(endpoint: ZkEndpoint, session_id: int, timeout_s: float = 15.0) -> None:
    """Take session `session_id` over (connecting as `endpoint` does: over TLS when it has TLS) and close it."""
    connect = {**endpoint.kazoo_args(), "auth_data": []}  # the session's password is the whole authority needed
    takeover = KazooClient(**connect, client_id=(session_id, session_password(session_id)), timeout=timeout_s)
    takeover.start(timeout=timeout_s)
    assert takeover.client_id[0] == session_id, (
        f"ZooKeeper gave session {takeover.client_id[0]:#x}, not {session_id:#x}: the password was refused")
    takeover.stop()
    takeover.close()
