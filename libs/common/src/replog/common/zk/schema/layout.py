"""The ZooKeeper layout as data: every path, who writes it, what it holds, with an example, and its ACL.

docs/zookeeper.md is drawn from `LAYOUT` and `ACL_PATHS` (docs/generate.py); a unit test checks
that every path constant of paths.py has a row, so a new znode cannot be left out of the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import znode_acls as acls
from .acl_bindings import ACLS, AclChangeMarker, AclEntry, AclResourceRecord, acl_resource_path
from .admin import ElectionRequest, ReassignmentRequest, ReassignmentThrottle
from .client_quotas import QUOTA_USERS, QUOTAS, QuotaChangeMarker, QuotaRecord
from .paths import (
    CONTROLLER,
    CONTROLLER_EPOCH,
    PERSISTENT_PATHS,
    PREFERRED_REPLICA_ELECTION,
    PRODUCER_ID_BLOCK,
    REASSIGN_PARTITIONS,
    REASSIGNMENT_THROTTLE,
    UNCLEAN_LEADER_ELECTION,
    broker_path,
    delete_topic_path,
    partition_path,
    partition_state_path,
    partitions_path,
    topic_config_path,
    topic_path,
)
from .state import (
    BrokerRegistration,
    ControllerRecord,
    PartitionStateRecord,
    ProducerIdBlock,
    TopicAssignment,
    TopicConfigRecord,
    encode_controller_epoch,
)


@dataclass(frozen=True)
class Znode:
    path: str          # with <placeholders> for the variable parts
    kind: str          # "persistent" or "ephemeral"
    writer: str        # who creates and changes it
    meaning: str
    example: bytes     # what it holds, encoded by this module

    @property
    def acl(self) -> tuple[acls.Grant, ...]:
        return acl_of_pattern(self.path)


_PLACEHOLDERS = {"<id>": "1", "<topic>": "orders", "<p>": "0"}


def acl_of_pattern(path: str) -> tuple[acls.Grant, ...]:
    """The ACL of a path written with <placeholders> (as in LAYOUT); `<id>` stands for broker 1."""
    for placeholder, value in _PLACEHOLDERS.items():
        path = path.replace(placeholder, value)
    return acls.acl_of(path)


LAYOUT: tuple[Znode, ...] = (
    Znode(CONTROLLER, "ephemeral", "the controller that wins the election",
          "the active controller; its deletion starts an election",
          ControllerRecord(1, 1767225600000, "10.0.0.5", 9190).encode()),
    Znode(CONTROLLER_EPOCH, "persistent", "the controller that wins the election",
          "the controller epoch as decimal text; its zkVersion fences every controller write",
          encode_controller_epoch(7)),
    Znode(broker_path("<id>"), "ephemeral", "that broker only",
          "a live broker's registration; its czxid is the broker epoch; lost_committed_records names the partitions "
          "whose committed records it lost in an unclean shutdown, until it has caught up; unclean_start says it "
          "started without the clean-shutdown marker; log_dirs are its log directories, offline_log_dirs those a "
          "storage error took offline since it registered, and offline_partitions the replicas that lived there "
          "(no ISR, no leadership until it registers again); min_insync_replicas is its default "
          "min.insync.replicas (1 when absent), of which the controller takes the lowest for topics without their own",
          BrokerRegistration(2, "10.0.0.6", 9290, "b", 9390, 1767225600000, (("orders", 3),),
                             ("/disk1/replog", "/disk2/replog"), ("/disk2/replog",), (("audit", 0),),
                             unclean_start=True, min_insync_replicas_default=2).encode()),
    Znode(topic_path("<topic>"), "persistent", "the gateway (create, add partitions); the controller (reassignment)",
          "the topic's replica assignment, and the replicas being added or removed",
          TopicAssignment({0: (1, 2, 3), 1: (2, 3, 4)}, {1: (4,)}, {1: (1,)}).encode()),
    Znode(partition_state_path("<topic>", "<p>"), "persistent", "the active controller only",
          "leader, leader epoch and ISR (and the leader epoch of the last unclean election, when one "
          "happened, and the eligible leader replicas, elr, when there are any); its zkVersion is the "
          "partition epoch",
          PartitionStateRecord(1, 4, (1,), 7, elr=(2, 3)).encode()),
    Znode(delete_topic_path("<topic>"), "persistent", "the gateway; the controller deletes it when done",
          "the topic is being deleted", b""),
    Znode(REASSIGN_PARTITIONS, "persistent", "the gateway; the controller deletes it when done",
          "requested reassignments (an empty replica list cancels one)",
          ReassignmentRequest({("orders", 1): (2, 3, 4)}).encode()),
    Znode(PREFERRED_REPLICA_ELECTION, "persistent", "the gateway; the controller deletes it when done",
          "partitions whose preferred replica should lead", ElectionRequest((("orders", 0),)).encode()),
    Znode(UNCLEAN_LEADER_ELECTION, "persistent", "the gateway; the controller deletes it when done",
          "partitions to elect a leader outside the ISR for (may lose records)",
          ElectionRequest((("orders", 0),)).encode()),
    Znode(topic_config_path("<topic>"), "persistent", "the gateway",
          "the topic's config overrides", TopicConfigRecord({"min.insync.replicas": "2"}).encode()),
    Znode(REASSIGNMENT_THROTTLE, "persistent", "the gateway (reassign execute / verify)",
          "bytes per second a replica being added may copy", ReassignmentThrottle(10485760).encode()),
    Znode(ACLS, "persistent", "the gateway (CreateAcls, DeleteAcls), in the transaction that changes an ACL",
          "a change marker: brokers and gateways watch it and re-read the bindings below when it changes",
          AclChangeMarker(1767225600000).encode()),
    Znode(acl_resource_path("<resource_type>", "<pattern_type>", "<name>"), "persistent",
          "the gateway (CreateAcls, DeleteAcls); deleted with its last entry",
          "the ACL bindings of one resource pattern: resource_type topic or cluster, pattern_type literal or "
          "prefixed, name a topic, a prefix, * (every topic) or replog-cluster",
          AclResourceRecord((AclEntry("User:alice", "produce", "allow"),
                             AclEntry("User:*", "consume", "deny"))).encode()),
    Znode(QUOTAS, "persistent", "the gateway (AlterClientQuotas): created with the first quota, then set in the "
          "transaction that changes a quota",
          "a change marker: brokers watch it and re-read the client quotas below when it changes",
          QuotaChangeMarker(1767225600000).encode()),
    Znode(QUOTA_USERS, "persistent", "the gateway, with the first quota", "the folder of the users' client quotas",
          b""),
    Znode(f"{QUOTA_USERS}/<user>", "persistent", "the gateway (AlterClientQuotas); deleted with its last quota",
          "one user's client quotas in bytes per second on each broker, producer_byte_rate and consumer_byte_rate "
          "(either absent when not set); `<user>` is the user name percent-encoded (every byte but ASCII letters, "
          "digits, '.', '_' and '-'), and the node named `<default>` holds the default of every user",
          QuotaRecord(producer_byte_rate=1048576, consumer_byte_rate=2097152).encode()),
    Znode(PRODUCER_ID_BLOCK, "persistent", "brokers, by conditional update",
          "the last block of producer ids handed out", ProducerIdBlock(2, 1000, 1999).encode()),
)

# Every znode with an ACL of its own, for the reference: the root, the persistent parents, the
# partition parents, and every row of LAYOUT.
ACL_PATHS: tuple[str, ...] = (
    "/", *PERSISTENT_PATHS, partitions_path("<topic>"), partition_path("<topic>", "<p>"),
    *(znode.path for znode in LAYOUT if znode.path not in PERSISTENT_PATHS),
)
