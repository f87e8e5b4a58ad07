"""The ACL configuration keys brokers and gateways share (their one owner).

Each of those services' config dataclasses inherits `AclSettings`, so a key has one name, one
default and one help line in both.
"""

from __future__ import annotations

from dataclasses import dataclass

from replog.common.acls.core.model import parse_principals
from replog.common.config import setting
from replog.common.security.local import OPERATOR


def principal_list(value: str) -> str | None:
    try:
        parse_principals(value)
    except ValueError as exc:
        return str(exc)
    return None


principal_list.rule = "comma-separated principals, each User:<name>"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class AclSettings:
    super_users: str = setting(
        str(OPERATOR), "principals allowed every operation whatever the ACLs say, comma-separated (User:<name>); "
                       "empty for none. The default is the operator a local cluster makes a certificate for",
        principal_list)

    @property
    def super_user_principals(self) -> tuple[str, ...]:
        return parse_principals(self.super_users)
