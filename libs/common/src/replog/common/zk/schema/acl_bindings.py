"""The ACL bindings' znodes: their paths and JSON (the one owner of both).

Layout: one persistent znode per resource pattern,
`/acls/<resource_type>/<pattern_type>/<resource_name>`, holding the JSON list of that pattern's
entries (principal, operation, permission), as Kafka's `/kafka-acl/<type>/<name>` does. The
parent `/acls` holds a change marker that every ACL write sets in the same transaction.

Why a list per resource pattern rather than one znode per binding: a binding has no natural
znode name (a principal may hold characters a path cannot), and a create or a delete by filter
becomes one version-checked set per pattern touched, decided on the list it read; a concurrent
writer fails the version check and the gateway decides again. Why the marker: a reader keeps
one watch, on `/acls`, instead of a watch per pattern znode plus one per folder, and re-reads
the subtree when it fires; since the marker changes in the same transaction as the entries, a
reader woken by it sees at least that change.

Resource names are znode names as they are: the ACL model admits only topic-name characters,
`*` and `replog-cluster`, never "." or "..".
"""

from __future__ import annotations

from dataclasses import dataclass

from .codec import ZkDataError, dump_json, int_field, load_json

ACLS = "/acls"

def acl_pattern_folder(resource_type: str, pattern_type: str) -> str:
    """The parent of a pattern znode; the writer creates it (idempotently), a reader may find none."""
    return f"{ACLS}/{resource_type}/{pattern_type}"


def acl_resource_path(resource_type: str, pattern_type: str, resource_name: str) -> str:
    return f"{ACLS}/{resource_type}/{pattern_type}/{resource_name}"


def parse_acl_resource_path(path: str) -> tuple[str, str, str] | None:
    """(resource_type, pattern_type, resource_name) of a pattern znode; None for any other path."""
    if not path.startswith(ACLS + "/"):
        return None
    parts = path[len(ACLS) + 1:].split("/")
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


@dataclass(frozen=True, order=True)
class AclEntry:
    principal: str
    operation: str
    permission: str


@dataclass(frozen=True)
class AclResourceRecord:
    """The entries of one resource pattern, kept sorted so equal sets encode alike."""

    entries: tuple[AclEntry, ...]

    def encode(self) -> bytes:
        return dump_json({
            "version": 1,
            "acls": [{"principal": e.principal, "operation": e.operation, "permission": e.permission}
                     for e in sorted(set(self.entries))],
        })

    @staticmethod
    def decode(data: bytes, path: str) -> "AclResourceRecord":
        value = load_json(data, path)
        items = value.get("acls")
        if not isinstance(items, list):
            raise ZkDataError(f"{path}: 'acls' must be a list")
        entries = []
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not all(
                    isinstance(item.get(key), str) for key in ("principal", "operation", "permission")):
                raise ZkDataError(f"{path}: acls[{index}] needs string 'principal', 'operation' and 'permission'")
            entries.append(AclEntry(item["principal"], item["operation"], item["permission"]))
        return AclResourceRecord(tuple(sorted(set(entries))))


@dataclass(frozen=True)
class AclChangeMarker:
    """Set on /acls with every ACL write, so that one watch sees every change."""

    changed_at_ms: int

    def encode(self) -> bytes:
        return dump_json({"version": 1, "changed_at_ms": self.changed_at_ms})

    @staticmethod
    def decode(data: bytes, path: str = ACLS) -> "AclChangeMarker":
        return AclChangeMarker(int_field(load_json(data, path), "changed_at_ms", path))
