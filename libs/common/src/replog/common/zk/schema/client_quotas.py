"""The client quotas' znodes: their paths and JSON (the one owner of both).

Layout, after Kafka's `/config/users/<user>`: one persistent znode per user with quotas,
`/config/quotas/users/<user>`, holding that user's rates in bytes per second, and one for the
default of every user, `/config/quotas/users/<default>`. The parent `/config/quotas` holds a
change marker that every quota write sets in the same transaction, so a reader keeps one watch
(on the marker) and re-reads the folder when it fires, as for the ACL bindings
(acl_bindings.py). The gateway creates `/config/quotas` and its folder with the first quota
(it may create children of /config), so a cluster laid out before quotas existed needs no
change; until then a reader finds no quota.

A user name becomes a znode name percent-encoded: every UTF-8 byte outside ASCII letters, digits,
'.', '_' and '-' is written `%XX` (upper-case hex), and a name of only dots is encoded whole, so
no name is "." or "..", holds a "/", or reads as `<default>` ('<' is encoded). Decoding is strict:
a znode name that is not the encoding of its own decoding is refused, so two znodes never stand
for one user.

A value is `{"version": 1, "producer_byte_rate": N, "consumer_byte_rate": N}`, either rate
absent when that quota is not set; a znode left with neither is deleted. Keys a later version
may add are ignored by this one; the rates' ranges are the quota model's
(replog.common.quotas.core.model), which readers check after decoding.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from .codec import ZkDataError, dump_json, int_field, load_json

QUOTAS = "/config/quotas"
QUOTA_USERS = "/config/quotas/users"
DEFAULT_USER_NODE = "<default>"
USER_PREFIX = "User:"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
RATE_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)

_SAFE = frozenset(string.ascii_letters + string.digits + "._-")


def encode_user_name(name: str) -> str:
    encoded = "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in name)
    if set(encoded) == {"."}:
        return encoded.replace(".", "%2E")
    return encoded


def decode_user_node(node: str, path: str = QUOTA_USERS) -> str:
    """The user name a znode under the folder stands for; ZkDataError for a name no writer makes."""
    raw, i = bytearray(), 0
    while i < len(node):
        if node[i] == "%":
            try:
                raw.append(int(node[i + 1:i + 3], 16))
            except ValueError:
                raise ZkDataError(f"{path}/{node}: not a percent-encoded user name") from None
            i += 3
        else:
            raw += node[i].encode()
            i += 1
    try:
        name = raw.decode()
    except UnicodeDecodeError:
        raise ZkDataError(f"{path}/{node}: not a percent-encoded UTF-8 user name") from None
    if not name or encode_user_name(name) != node:
        raise ZkDataError(f"{path}/{node}: not the canonical encoding of a user name")
    return name


def quota_user_path(principal: str | None) -> str:
    """The znode of `principal`'s quotas ("User:<name>"), or of the default's for None."""
    if principal is None:
        return f"{QUOTA_USERS}/{DEFAULT_USER_NODE}"
    assert principal.startswith(USER_PREFIX), f"not a user principal: {principal!r}"
    return f"{QUOTA_USERS}/{encode_user_name(principal[len(USER_PREFIX):])}"


def parse_quota_user_node(node: str) -> str | None:
    """The principal a znode of the folder holds the quotas of; None for the default's."""
    if node == DEFAULT_USER_NODE:
        return None
    return USER_PREFIX + decode_user_node(node)


@dataclass(frozen=True)
class QuotaRecord:
    """One entity's rates in bytes per second; None where that quota is not set."""

    producer_byte_rate: int | None = None
    consumer_byte_rate: int | None = None

    @property
    def empty(self) -> bool:
        return self.producer_byte_rate is None and self.consumer_byte_rate is None

    def encode(self) -> bytes:
        value: dict = {"version": 1}
        if self.producer_byte_rate is not None:
            value[PRODUCER_BYTE_RATE] = self.producer_byte_rate
        if self.consumer_byte_rate is not None:
            value[CONSUMER_BYTE_RATE] = self.consumer_byte_rate
        return dump_json(value)

    @staticmethod
    def decode(data: bytes, path: str) -> "QuotaRecord":
        value = load_json(data, path)
        rates = {}
        for key in RATE_KEYS:
            if key in value:
                rate = int_field(value, key, path)
                if rate < 1:
                    raise ZkDataError(f"{path}: '{key}' must be at least 1, found {rate}")
                rates[key] = rate
        return QuotaRecord(rates.get(PRODUCER_BYTE_RATE), rates.get(CONSUMER_BYTE_RATE))


@dataclass(frozen=True)
class QuotaChangeMarker:
    """Set on /config/quotas with every quota write, so that one watch sees every change."""

    changed_at_ms: int

    def encode(self) -> bytes:
        return dump_json({"version": 1, "changed_at_ms": self.changed_at_ms})

    @staticmethod
    def decode(data: bytes, path: str = QUOTAS) -> "QuotaChangeMarker":
        return QuotaChangeMarker(int_field(load_json(data, path), "changed_at_ms", path))
