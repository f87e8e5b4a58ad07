"""ZooKeeper credentials for a local cluster: a random password per identity, one file per process.

Under `<state>/zookeeper/credentials/` (mode 0700): `passwords` holds every identity's
`user:password` (the source of the others, kept across restarts so a restarted process
authenticates as before), and one credentials file per process (docs/zookeeper-security.md), each
mode 0600: `controller-<i>`, `broker-<i>`, `gateway-<i>`, and `super` for operators, tests
and tools (ZooKeeper's super user passes every ACL; its file also names every role's digest
id, so that what a test creates gets the schema's ACLs too).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Callable

from replog.common.zk.auth import ZkCredentials, ZkEndpoint, digest_id, parse_credentials, write_credentials_file
from replog.common.zk.schema import znode_acls

SUPER_USER = "super"


def credentials_dir(state_dir: Path) -> Path:
    return state_dir / "zookeeper" / "credentials"


def _identities(names: list[str]) -> list[str]:
    """The identities a cluster with these processes needs, super first."""
    users = [SUPER_USER, *znode_acls.ROLES]
    users += [n for n in names if n.startswith(znode_acls.BROKER_IDENTITY_PREFIX)]
    return users


def _passwords(directory: Path, users: list[str]) -> dict[str, str]:
    """Every user's password, made once (the file is kept) and added to for new users."""
    path = directory / "passwords"
    passwords: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            user, sep, password = line.partition(":")
            if sep:
                passwords[user] = password
    missing = [u for u in users if u not in passwords]
    if missing or not path.exists():
        passwords.update({u: secrets.token_urlsafe(18) for u in missing})
        write_credentials_file(path, sorted(passwords.items()), [])
    return passwords


def generate(state_dir: Path, names: list[str]) -> str:
    """Write every process's credentials file (and the super user's); returns ZooKeeper's super digest."""
    directory = credentials_dir(state_dir)
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    passwords = _passwords(directory, _identities(names))
    digests = {user: digest_id(user, password) for user, password in passwords.items()}
    roles = [digests[role] for role in znode_acls.ROLES]
    brokers = [digests[n] for n in sorted(names) if n.startswith(znode_acls.BROKER_IDENTITY_PREFIX)]
    for name in names:
        role = name.rsplit("-", 1)[0]
        if role == "broker":
            own = [(name, passwords[name]), (znode_acls.BROKERS_ROLE, passwords[znode_acls.BROKERS_ROLE])]
            others = [d for d in roles if not d.startswith(znode_acls.BROKERS_ROLE + ":")]
        else:
            own = [(role, passwords[role])]
            # A controller checks registrations against the brokers' exact digest ids (registrations.py).
            others = [d for d in roles if not d.startswith(role + ":")] + (brokers if role == "controller" else [])
        write_credentials_file(directory / name, own, others)
    write_credentials_file(directory / SUPER_USER, [(SUPER_USER, passwords[SUPER_USER])], roles + brokers)
    return digests[SUPER_USER]


def plan(state_dir: Path, spec) -> tuple[list[str], Callable[[str], list[str]]]:
    """For a cluster of `spec` (a ClusterSpec): ZooKeeper's extra JVM arguments, and each service's extra
    arguments by process name; none without `spec.zookeeper_auth`."""
    if not spec.zookeeper_auth:
        return [], lambda name: []
    counts = {"controller": spec.controllers, "broker": spec.brokers, "gateway": spec.gateways}
    super_digest = generate(state_dir, [f"{role}-{i}" for role, count in counts.items() for i in range(1, count + 1)])
    return zookeeper_jvm_args(super_digest), lambda name: service_args(state_dir, name)


def service_args(state_dir: Path, name: str) -> list[str]:
    """The flag that points process `name` at its credentials file."""
    return ["--zookeeper-credentials-file", str(credentials_dir(state_dir) / name)]


def zookeeper_jvm_args(super_digest: str) -> list[str]:
    return [f"-Dzookeeper.DigestAuthenticationProvider.superDigest={super_digest}"]


def super_credentials(state_dir: Path) -> ZkCredentials | None:
    """The super user's credentials, None for a cluster without ZooKeeper authentication."""
    path = credentials_dir(state_dir) / SUPER_USER
    return parse_credentials(path.read_text(), str(path)) if path.exists() else None


def super_endpoint(state_dir: Path, connect: str) -> ZkEndpoint:
    return ZkEndpoint(connect, super_credentials(state_dir))
