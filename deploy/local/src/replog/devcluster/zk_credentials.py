"""ZooKeeper credentials for a local cluster: a random password per identity, one file per process.

Under `<state>/zookeeper/credentials/` (mode 0700): `passwords` holds every identity's
`user:password` (the source of the others, kept across restarts so a restarted process
authenticates as before), and one credentials file per process (docs/zookeeper-security.md), each
mode 0600: `controller-<i>`, `broker-<i>`, `gateway-<i>`, and `super` for operators, tests
and tools (ZooKeeper's super user passes every ACL; its file also names every role's digest
id, so that what a test creates gets the schema's ACLs too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from replog.common.zk import credentials_files
from replog.common.zk.auth import ZkCredentials, ZkEndpoint, parse_credentials
from replog.common.zk.schema import znode_acls

SUPER_USER = credentials_files.SUPER_USER


def credentials_dir(state_dir: Path) -> Path:
    return state_dir / "zookeeper" / "credentials"


def generate(state_dir: Path, names: list[str]) -> str:
    """Write every process's credentials file (and the super user's); returns ZooKeeper's super digest.
    What each file holds is credentials_files.py's; here each process gets its role's (or its broker's)
    file under its own name."""
    brokers = [n.removeprefix(znode_acls.BROKER_IDENTITY_PREFIX) for n in names
               if n.startswith(znode_acls.BROKER_IDENTITY_PREFIX)]
    by_file: dict[str, list[str]] = {}
    for name in names:
        role = name.rsplit("-", 1)[0]
        by_file.setdefault(name if role == "broker" else role, []).append(name)
    return credentials_files.write_all(credentials_dir(state_dir), brokers, by_file)


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
    return [credentials_files.zookeeper_jvm_flag(super_digest)]


def super_credentials(state_dir: Path) -> ZkCredentials | None:
    """The super user's credentials, None for a cluster without ZooKeeper authentication."""
    path = credentials_dir(state_dir) / SUPER_USER
    return parse_credentials(path.read_text(), str(path)) if path.exists() else None


def super_endpoint(state_dir: Path, connect: str, tls=None) -> ZkEndpoint:
    """ZooKeeper as its super user, over TLS with `tls` (TlsFiles) when ZooKeeper has it."""
    return ZkEndpoint(connect, super_credentials(state_dir), tls)
