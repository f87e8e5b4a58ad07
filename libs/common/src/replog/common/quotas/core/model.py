"""Client quotas as values: the quota types, the rules a quota must follow, and which one applies.

A quota is a rate in bytes per second that one user's clients may produce to (producer_byte_rate)
or fetch from (consumer_byte_rate) each broker, as Kafka's. It is set for a user (`User:<name>`)
or as the default of every user; a user's own quota of a type wins over the default's of that
type, each type on its own (a user with only its own producer rate fetches under the default's
consumer rate). No quota of a type, own or default: the user is not limited in it. Each user has
its own allowance, the default's included: the default is not shared.

`principal_problem` and `rate_problem` say what is wrong with a value in words a person can act
on, or None; the gateway refuses such a request before anything is written, and a reader refuses
a stored value that breaks them (and keeps the quotas it had).
"""

from __future__ import annotations

from typing import Mapping

from replog.common.acls.core.model import ANY_USER, USER
from replog.common.acls.core.model import principal_problem as acl_principal_problem
from replog.common.zk.schema.client_quotas import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, RATE_KEYS, QuotaRecord

__all__ = ["CONSUMER_BYTE_RATE", "PRODUCER_BYTE_RATE", "QUOTA_TYPES", "RATE_MAX", "RATE_MIN", "QuotaRecord",
           "QuotaSnapshot", "principal_problem", "rate_problem"]

QUOTA_TYPES = RATE_KEYS  # producer_byte_rate, consumer_byte_rate
RATE_MIN = 1
RATE_MAX = 2**53 - 1  # exact in every JSON reader, and far past any link


def principal_problem(principal: str) -> str | None:
    """What is wrong with `principal` as the user a quota is for, or None (the ACLs' rules, but for User:*)."""
    if principal == ANY_USER:
        return "User:* is not one user; the quotas of every user are the default's (default_user)"
    kind, sep, name = principal.partition(":")
    if not sep or kind != USER or not name:
        return f"principal {principal!r} is not of the form User:<name>"
    return acl_principal_problem(principal)


def rate_problem(quota_type: str, value: int) -> str | None:
    if quota_type not in QUOTA_TYPES:
        return f"unknown quota type {quota_type!r}; expected one of {', '.join(QUOTA_TYPES)}"
    if not RATE_MIN <= value <= RATE_MAX:
        return (f"{quota_type} {value} is out of range: a rate is {RATE_MIN} to {RATE_MAX} bytes per second "
                "(to lift a quota, remove it)")
    return None


def record_problem(record: QuotaRecord) -> str | None:
    for quota_type in QUOTA_TYPES:
        value = getattr(record, quota_type)
        if value is not None and (problem := rate_problem(quota_type, value)):
            return problem
    return None


class QuotaSnapshot:
    """The quotas of every entity at one moment; `entries` maps a principal, or None for the default, to its
    quotas. Immutable once built; `rate` is one dictionary look-up."""

    def __init__(self, entries: Mapping[str | None, QuotaRecord] | None = None) -> None:
        self.entries: dict[str | None, QuotaRecord] = {k: v for k, v in (entries or {}).items() if not v.empty}
        default = self.entries.get(None, QuotaRecord())
        self._own = {quota_type: {principal: getattr(record, quota_type) for principal, record in self.entries.items()
                                  if principal is not None and getattr(record, quota_type) is not None}
                     for quota_type in QUOTA_TYPES}
        self._default = {quota_type: getattr(default, quota_type) for quota_type in QUOTA_TYPES}
        self.empty = not self.entries

    def rate(self, quota_type: str, principal: str) -> int | None:
        """Bytes per second `principal` is held to in `quota_type`; None when no quota applies."""
        return self._own[quota_type].get(principal, self._default[quota_type])

    def effective(self, principal: str) -> QuotaRecord:
        return QuotaRecord(self.rate(PRODUCER_BYTE_RATE, principal), self.rate(CONSUMER_BYTE_RATE, principal))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuotaSnapshot) and other.entries == self.entries

    def __repr__(self) -> str:
        return f"QuotaSnapshot({self.entries!r})"
