"""ZooKeeper authentication: the credentials file, digest ids, and the ACLs sessions create znodes with.

Every replog session authenticates with ZooKeeper's built-in `digest` scheme: it sends
`user:password`, and ZooKeeper knows it from then on as the id
`user:base64(sha1("user:password"))`. An ACL names that id, so a process that gives a
znode an ACL naming another principal needs that principal's digest id (not its password).

The credentials file (config key `zookeeper_credentials_file`, mode 0600) holds, one per line:

    broker-1:password          identities this process authenticates as; the first is its own,
    brokers:password           later ones are groups it belongs to
    digest gateway:Zm9vYmFy=   the digest id of a principal it names in ACLs but is not

Blank lines and lines starting with `#` are skipped. The digest id of each role
(`controller`, `gateway`, `brokers`; schema/znode_acls.py) must be known, from an identity line
or a `digest` line; a `digest broker-<id>:...` line lets a controller check a registration's
writer exactly (schema.znode_acls.registration_acl_problem).

An empty key means no authentication: sessions are anonymous and every znode gets the open ACL,
as before authentication existed (`ZkEndpoint.credentials` is None).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from replog.common.config import ConfigError, setting
from replog.common.zk.schema import znode_acls as acls

if TYPE_CHECKING:
    from replog.common.security.files import TlsFiles

log = logging.getLogger(__name__)

_USER = re.compile(r"^[A-Za-z0-9_.\-]+$")
OPEN_ACL = ((acls.READ | acls.WRITE | acls.CREATE | acls.DELETE | acls.ADMIN_PERM, "world", "anyone"),)

AclEntry = tuple[int, str, str]   # perms, scheme, id


class CredentialsError(ConfigError):
    """The credentials file is missing, unreadable or malformed."""


def credentials_file_setting():
    """The `zookeeper_credentials_file` key, declared by every service's config with this one definition."""
    return setting("", "file of this process's ZooKeeper digest credentials (user:password lines, then "
                       "'digest user:hash' lines for the other roles; see docs/zookeeper-security.md); empty: anonymous "
                       "sessions and open ACLs")


def digest_id(user: str, password: str) -> str:
    """The id ZooKeeper's digest scheme gives a session that sent `user:password`."""
    hashed = hashlib.sha1(f"{user}:{password}".encode()).digest()
    return f"{user}:{base64.b64encode(hashed).decode()}"


@dataclass(frozen=True)
class ZkCredentials:
    """The identities a process authenticates as (own first) and the digest ids its ACLs name."""

    identities: tuple[tuple[str, str], ...]
    digests: Mapping[str, str] = field(default_factory=dict)

    @property
    def user(self) -> str:
        return self.identities[0][0]

    def auth_packets(self) -> list[bytes]:
        """The `auth` bytes of each digest auth packet, in order."""
        return [f"{user}:{password}".encode() for user, password in self.identities]

    def digest_of(self, user: str) -> str | None:
        for name, password in self.identities:
            if name == user:
                return digest_id(name, password)
        return self.digests.get(user)

    def acl(self, path: str) -> tuple[AclEntry, ...]:
        """The ACL `path` gets when this process creates it (schema.znode_acls.acl_of)."""
        entries = []
        for grant in acls.acl_of(path):
            digest = self.digest_of(grant.user)
            if digest is None:
                raise CredentialsError(f"cannot give {path} its ACL: no digest id for '{grant.user}' "
                                       f"(add a line 'digest {grant.user}:<digest>' to the credentials file)")
            entries.append((grant.perms, "digest", digest))
        return tuple(entries)


def parse_credentials(text: str, source: str) -> ZkCredentials:
    identities: list[tuple[str, str]] = []
    digests: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source} line {number}"
        if line.startswith("digest "):
            ident = line[len("digest "):].strip()
            user, sep, hashed = ident.partition(":")
            if not sep or not _USER.match(user) or not hashed:
                raise CredentialsError(f"{where}: expected 'digest user:base64-digest'")
            digests[user] = ident
            continue
        user, sep, password = line.partition(":")
        if not sep or not _USER.match(user) or not password:
            raise CredentialsError(f"{where}: expected 'user:password' (user of letters, digits, '_', '.', '-') "
                                   "or 'digest user:base64-digest'")
        identities.append((user, password))
    if not identities:
        raise CredentialsError(f"{source}: no 'user:password' line; the first one is the identity to use")
    credentials = ZkCredentials(tuple(identities), digests)
    missing = [role for role in acls.ROLES if credentials.digest_of(role) is None]
    if missing:
        raise CredentialsError(f"{source}: no digest id for {', '.join(missing)}; every process names every role "
                               f"in ACLs (add 'digest {missing[0]}:<digest>' lines)")
    return credentials


def load_credentials(path: str, identity: str | None = None) -> ZkCredentials | None:
    """The credentials in `path`; None (anonymous sessions, open ACLs, one warning) when `path` is "".
    With `identity`, the file's own identity (its first line) must be that one."""
    if not path:
        log.warning("zookeeper_credentials_file is empty: ZooKeeper sessions are anonymous and znodes get the "
                    "open ACL, so anyone who can reach ZooKeeper can change the cluster's state")
        return None
    file = Path(path)
    try:
        mode = file.stat().st_mode
        text = file.read_text()
    except OSError as exc:
        raise CredentialsError(f"cannot read zookeeper_credentials_file {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("zookeeper_credentials_file %s is readable by others (mode %o); chmod 600 it", path,
                    stat.S_IMODE(mode))
    credentials = parse_credentials(text, path)
    if identity is not None and credentials.user != identity:
        raise CredentialsError(f"zookeeper_credentials_file {path} authenticates as '{credentials.user}', but this "
                               f"process must authenticate as '{identity}' (its first line)")
    return credentials


def write_credentials_file(path: Path, identities: list[tuple[str, str]], digests: list[str]) -> None:
    """Write a credentials file readable by its owner only (for tools that generate them)."""
    lines = [f"{user}:{password}" for user, password in identities] + [f"digest {d}" for d in digests]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)


@dataclass(frozen=True)
class ZkEndpoint:
    """Where ZooKeeper is (connect string, with any chroot) and how to authenticate there: digest
    `credentials`, and `tls`, the files of a TLS connection (tls.py; None: plaintext)."""

    connect: str
    credentials: ZkCredentials | None = None
    tls: "TlsFiles | None" = None

    @staticmethod
    def of(value: "ZkEndpoint | str") -> "ZkEndpoint":
        """An endpoint as given, or an anonymous one for a bare connect string."""
        return value if isinstance(value, ZkEndpoint) else ZkEndpoint(value)

    def acl(self, path: str) -> tuple[AclEntry, ...]:
        return OPEN_ACL if self.credentials is None else self.credentials.acl(path)

    def kazoo_auth_data(self) -> list[tuple[str, str]]:
        if self.credentials is None:
            return []
        return [("digest", packet.decode()) for packet in self.credentials.auth_packets()]

    def kazoo_acl(self, path: str) -> list:
        return kazoo_acl(self.acl(path))

    def kazoo_args(self) -> dict:
        """KazooClient's arguments for this endpoint: hosts, digest auth and TLS (tests and tools that open
        a kazoo client of their own)."""
        from replog.common.zk.tls import kazoo_args

        return {"hosts": self.connect, "auth_data": self.kazoo_auth_data(), **kazoo_args(self.tls)}


def kazoo_acl(entries: tuple[AclEntry, ...] | list[AclEntry]) -> list:
    """(perms, scheme, id) entries as kazoo's ACL objects. kazoo is imported here, not at load: the
    credentials file tools (`replog zk-credentials`, in the client's wheel) use this module without it."""
    from kazoo.security import ACL, Id

    return [ACL(perms, Id(scheme, ident)) for perms, scheme, ident in entries]
