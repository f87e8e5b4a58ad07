"""The ZooKeeper credentials files of a whole cluster: which identities it needs, a password for each,
and what each process's file holds (the file format is auth.py's; who may do what, schema/znode_acls.py).

One source of passwords, `passwords` (every identity's `user:password`, mode 0600), is kept across runs:
adding a broker adds its identity and leaves every other password, and so every running process's file,
as it was. From it come:

- `controller` and `gateway`: the role's identity (every controller, every gateway authenticates as its
  role), plus the other roles' digest ids; a controller's also names every broker's own digest id, to
  check a registration's writer exactly;
- `broker-<id>`: that broker's own identity and the `brokers` group's, plus the other roles' digest ids;
- `super`: ZooKeeper's super user, for operators and tools (passes every ACL), naming every digest id;
  ZooKeeper learns its digest from `-Dzookeeper.DigestAuthenticationProvider.superDigest=...`, and
  `super.digest` holds that digest id alone, for a ZooKeeper server's start script to read.

`replog zk-credentials` writes them for real hosts; the local cluster (deploy/local) for its processes.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from replog.common.zk.auth import digest_id, write_credentials_file
from replog.common.zk.schema import znode_acls

SUPER_USER = "super"
PASSWORDS_FILE = "passwords"
SUPER_DIGEST_FILE = "super.digest"
PASSWORD_BYTES = 18


def identities(broker_ids: list[str]) -> list[str]:
    """Every identity a cluster with these brokers needs, super first."""
    return [SUPER_USER, *znode_acls.ROLES, *(znode_acls.broker_identity(b) for b in broker_ids)]


def passwords(directory: Path, users: list[str]) -> dict[str, str]:
    """Every user's password from `directory/passwords`, made for the users it lacks (and written back)."""
    path = Path(directory) / PASSWORDS_FILE
    known: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            user, sep, password = line.partition(":")
            if sep:
                known[user] = password
    missing = [u for u in users if u not in known]
    if missing or not path.exists():
        known.update({u: secrets.token_urlsafe(PASSWORD_BYTES) for u in missing})
        write_credentials_file(path, sorted(known.items()), [])
    return known


def file_contents(known: dict[str, str], broker_ids: list[str]) -> dict[str, tuple[list[tuple[str, str]], list[str]]]:
    """By file name (`controller`, `gateway`, `broker-<id>`, `super`): the identities it authenticates as
    (own first) and the digest ids it names."""
    digests = {user: digest_id(user, password) for user, password in known.items()}
    roles = [digests[role] for role in znode_acls.ROLES]
    brokers = [digests[znode_acls.broker_identity(b)] for b in sorted(broker_ids, key=_numeric_first)]
    contents = {}
    for role in (znode_acls.CONTROLLER_ROLE, znode_acls.GATEWAY_ROLE):
        others = [d for d in roles if not d.startswith(role + ":")]
        contents[role] = ([(role, known[role])], others + (brokers if role == znode_acls.CONTROLLER_ROLE else []))
    group = znode_acls.BROKERS_ROLE
    for broker_id in broker_ids:
        own = znode_acls.broker_identity(broker_id)
        contents[own] = ([(own, known[own]), (group, known[group])], [d for d in roles if not d.startswith(group + ":")])
    contents[SUPER_USER] = ([(SUPER_USER, known[SUPER_USER])], roles + brokers)
    return contents


def _numeric_first(broker_id: str):
    return (0, int(broker_id), "") if str(broker_id).isdigit() else (1, 0, str(broker_id))


def write_all(directory: Path, broker_ids: list[str], names: dict[str, list[str]] | None = None) -> str:
    """Write `passwords` and every file into `directory` (made mode 0700); returns the super user's digest
    id for ZooKeeper's command line. `names` maps a file of file_contents to the names it is written
    under instead (the local cluster writes the controller's as `controller-1`, `controller-2`, ...)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    known = passwords(directory, identities(broker_ids))
    for name, (own, others) in file_contents(known, broker_ids).items():
        for target in (names or {}).get(name, [name]):
            write_credentials_file(directory / target, own, others)
    super_digest = digest_id(SUPER_USER, known[SUPER_USER])
    fd = os.open(directory / SUPER_DIGEST_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(super_digest + "\n")
    return super_digest


def zookeeper_jvm_flag(super_digest: str) -> str:
    """The JVM option that tells ZooKeeper its super user's digest."""
    return f"-Dzookeeper.DigestAuthenticationProvider.superDigest={super_digest}"
