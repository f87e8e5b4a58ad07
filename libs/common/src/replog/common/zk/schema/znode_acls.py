"""Who may do what to each znode: the ACL of every path, next to the paths themselves.

ZooKeeper checks an ACL on the znode an operation names: READ to get data or children,
WRITE to set data, CREATE and DELETE (on the *parent*) to add or remove a child, ADMIN
to change the ACL. ACLs are not inherited, so every znode gets its own when it is created,
from `acl_of(path)`; whoever creates it (the gateway, a controller, a broker, or the first
process to lay out the tree) gives it the same ACL.

The principals are roles, not processes (docs/zookeeper-security.md):

- `controller`: every controller authenticates as the same identity. Any controller may
  take the seat and must then rewrite znodes an earlier one created; fencing between
  controllers is the controller epoch's job, not the ACLs'.
- `gateway`: every gateway, likewise.
- `brokers`: a group every broker also authenticates as (with a password the brokers
  share), for what all brokers do: register under /brokers/ids, claim producer ids, create the
  offsets topic when a cluster has none, read.
- `broker-<id>`: one broker's own identity; it alone may change its registration.

Every principal reads every znode (READ); a client that has not authenticated as one of
them reads and writes nothing. ADMIN (changing an ACL, and seeing its digest hashes) is for
ZooKeeper's super user (an operator), and for the controller on broker registrations.

The persistent znodes and the root of the connect string (the chroot, or `/`) are created open
and then claimed, given their ACL here (`ROOT_ACL` for the root), by the first process that
finds them open (ZkClient.ensure_layout).
"""

from __future__ import annotations

from dataclasses import dataclass

from .acl_bindings import ACLS
from .client_quotas import QUOTAS
from .paths import (
    ADMIN,
    BROKER_IDS,
    BROKERS,
    CONFIG,
    CONFIG_TOPICS,
    CONTROLLER,
    CONTROLLER_EPOCH,
    DELETE_TOPICS,
    PREFERRED_REPLICA_ELECTION,
    PRODUCER_ID_BLOCK,
    REASSIGN_PARTITIONS,
    REASSIGNMENT_THROTTLE,
    TOPICS,
    UNCLEAN_LEADER_ELECTION,
)

READ, WRITE, CREATE, DELETE, ADMIN_PERM = 1, 2, 4, 8, 16

CONTROLLER_ROLE = "controller"
GATEWAY_ROLE = "gateway"
BROKERS_ROLE = "brokers"
ROLES = (CONTROLLER_ROLE, GATEWAY_ROLE, BROKERS_ROLE)
BROKER_IDENTITY_PREFIX = "broker-"


def broker_identity(broker_id: int | str) -> str:
    """The digest user name of one broker."""
    return f"{BROKER_IDENTITY_PREFIX}{broker_id}"


@dataclass(frozen=True)
class Grant:
    """`perms` (a sum of READ, WRITE, CREATE, DELETE) for the digest identity named `user`."""

    user: str
    perms: int


def _acl(**extra: int) -> tuple[Grant, ...]:
    """READ for every role, plus `extra` permissions (and READ) per digest user."""
    perms = {role: READ for role in ROLES}
    for user, more in extra.items():
        perms[user] = perms.get(user, READ) | more
    return tuple(Grant(user, p) for user, p in sorted(perms.items()))


READ_ONLY = _acl()
# The root: only a controller adds (and removes) a child there once the layout exists: /controller.
ROOT_ACL = _acl(controller=CREATE | DELETE)

# Fixed paths (the persistent layout and the singletons).
_FIXED: dict[str, tuple[Grant, ...]] = {
    CONTROLLER: _acl(controller=WRITE),
    CONTROLLER_EPOCH: _acl(controller=WRITE),
    BROKERS: READ_ONLY,
    BROKER_IDS: _acl(brokers=CREATE),
    # brokers=CREATE: the first FindCoordinator of a cluster creates the offsets topic (groups/offsets_topic.py).
    TOPICS: _acl(gateway=CREATE, brokers=CREATE, controller=DELETE),
    ADMIN: _acl(gateway=CREATE, controller=DELETE),
    # brokers=CREATE: a Kafka client's DeleteTopics marks the topic through the listener (topic_admin/writes.py).
    DELETE_TOPICS: _acl(gateway=CREATE, brokers=CREATE, controller=DELETE),
    REASSIGN_PARTITIONS: _acl(gateway=WRITE, controller=WRITE),
    PREFERRED_REPLICA_ELECTION: READ_ONLY,
    UNCLEAN_LEADER_ELECTION: READ_ONLY,
    CONFIG: _acl(gateway=CREATE | DELETE),
    CONFIG_TOPICS: _acl(gateway=CREATE, brokers=CREATE, controller=DELETE),
    REASSIGNMENT_THROTTLE: _acl(gateway=WRITE),
    PRODUCER_ID_BLOCK: _acl(brokers=WRITE),
}
# /brokers/topics/<topic>: the gateway adds partitions, the controller moves replicas and
# manages the partitions subtree below it.
TOPIC_ACL = _acl(gateway=WRITE, controller=WRITE | CREATE | DELETE)
# /brokers/topics/<topic>/partitions[/<p>]: the controller's alone.
PARTITIONS_ACL = _acl(controller=CREATE | DELETE)
PARTITION_STATE_ACL = _acl(controller=WRITE)
# /admin/delete_topics/<topic>: a mark with no data; the controller deletes it through its parent.
DELETE_MARK_ACL = READ_ONLY
TOPIC_CONFIG_ACL = _acl(gateway=WRITE)
# /acls and everything under it, the clients' ACL bindings (acl_bindings.py): the gateway creates the folders
# and the pattern znodes, sets them and the change marker on /acls, and deletes a pattern with its last binding.
ACL_BINDINGS_ACL = _acl(gateway=WRITE | CREATE | DELETE)
# /config/quotas and everything under it, the client quotas (client_quotas.py): the gateway creates the marker
# znode, its folder and the users' znodes, sets them and the marker, and deletes a user's znode with its last quota.
CLIENT_QUOTAS_ACL = _acl(gateway=WRITE | CREATE | DELETE)


def broker_registration_acl(broker_id: int) -> tuple[Grant, ...]:
    """/brokers/ids/<id>: that broker alone may change it; it goes with the broker's session. The controller
    holds ADMIN there because ZooKeeper shows the digest hashes of an ACL only to ADMIN: with it, the
    controller checks the writer's whole digest id, not just its name (registration_acl_problem)."""
    return _acl(**{broker_identity(broker_id): WRITE, CONTROLLER_ROLE: ADMIN_PERM})


def acl_of(path: str) -> tuple[Grant, ...]:
    """The ACL every creator gives `path` (chroot removed); ValueError for a path replog does not use."""
    if path == "/":
        return ROOT_ACL
    if path in _FIXED:
        return _FIXED[path]
    if path == ACLS or path.startswith(ACLS + "/"):
        return ACL_BINDINGS_ACL
    if path == QUOTAS or path.startswith(QUOTAS + "/"):
        return CLIENT_QUOTAS_ACL
    parent, _, name = path.rpartition("/")
    if not name:
        raise ValueError(f"no ACL for {path!r}: not a znode path")
    if parent == BROKER_IDS and name.isdigit():
        return broker_registration_acl(int(name))
    if parent == TOPICS:
        return TOPIC_ACL
    if parent == DELETE_TOPICS:
        return DELETE_MARK_ACL
    if parent == CONFIG_TOPICS:
        return TOPIC_CONFIG_ACL
    parts = path[len(TOPICS) + 1:].split("/") if path.startswith(TOPICS + "/") else []
    if len(parts) in (2, 3) and parts[1] == "partitions" and (len(parts) == 2 or parts[2].isdigit()):
        return PARTITIONS_ACL
    if len(parts) == 4 and parts[1] == "partitions" and parts[2].isdigit() and parts[3] == "state":
        return PARTITION_STATE_ACL
    raise ValueError(f"no ACL for {path!r}: schema/znode_acls.py names the ACL of every replog znode")


def registration_acl_problem(entries: list[tuple[str, str, int]], broker_id: int, broker_digest: str | None) -> str:
    """Why a registration's ACL, as (scheme, id, perms) entries, does not show it was made by
    `broker-<id>`; "" when it does. The controller asks before counting a broker live, because
    ZooKeeper lets any principal with CREATE on /brokers/ids choose the child's name.

    WRITE must be held by the digest identity `broker-<id>` (by exactly `broker_digest`, its
    digest id, when the controller was given it) and by no one else but the controller."""
    own = broker_identity(broker_id)
    owners, impostors, others = [], [], []
    for scheme, ident, perms in entries:
        if not perms & WRITE:
            continue
        user = ident.split(":", 1)[0] if scheme == "digest" else ""
        if user == own:
            (owners if broker_digest is None or ident == broker_digest else impostors).append(ident)
        elif scheme != "digest" or user != CONTROLLER_ROLE:
            others.append(f"{scheme}:{user or ident}")  # a digest's hash is left out of messages
    if others:
        return f"its ACL lets {', '.join(others)} change it"
    if impostors:
        return f"its ACL names {own} with a digest id that is not {own}'s"
    if not owners:
        return f"its ACL does not name {own} as the writer"
    return ""


_PERM_LETTERS = ((READ, "r"), (WRITE, "w"), (CREATE, "c"), (DELETE, "d"), (ADMIN_PERM, "a"))


def describe(acl: tuple[Grant, ...]) -> str:
    """`controller:rw, gateway:r` -- for the reference and for log lines."""
    return ", ".join(f"{g.user}:{''.join(c for bit, c in _PERM_LETTERS if g.perms & bit)}" for g in acl)
