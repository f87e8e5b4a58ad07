"""Which broker registrations the controller believes: the ACL check of /brokers/ids/<id>.

Any broker may create children of /brokers/ids (ZooKeeper's CREATE cannot restrict a child's
name), so broker 1's credentials could register as broker 2. A broker gives its registration
the ACL schema/znode_acls.py names for it: WRITE for `broker-<id>` alone. The controller reads that
ACL (getACL) before counting a broker live, and ignores, with a warning, a registration whose
ACL names another writer (schema.znode_acls.registration_acl_problem). With the digest id of
`broker-<id>` in its credentials file the check is exact; without it, the name is checked.
With authentication off there are no ACLs to check and every registration counts.

`broker_info` is what the controller keeps of a registration; `lost_partitions` reads which partitions it
says the broker lost committed records of.
"""

from __future__ import annotations

import logging

from kazoo.exceptions import NoAuthError

from replog.common.core.partitions import TopicPartition
from replog.common.zk import schema
from replog.common.zk.auth import ZkCredentials
from replog.common.zk.schema import znode_acls as acls
from replog.controller.core.model import BrokerInfo

log = logging.getLogger(__name__)


def believed(broker_id: int, entries: list[tuple[str, str, int]] | None, credentials: ZkCredentials | None) -> bool:
    """Whether to count the registration of `broker_id`, whose ACL is `entries` (scheme, id, perms)."""
    if credentials is None:
        return True
    if entries is None:
        return False  # gone between the read of its data and of its ACL
    problem = acls.registration_acl_problem(entries, broker_id,
                                            credentials.digests.get(acls.broker_identity(broker_id)))
    if problem:
        log.warning("ignoring the registration at %s: %s; only %s may register as broker %d",
                    schema.broker_path(broker_id), problem, acls.broker_identity(broker_id), broker_id)
    return not problem


def read_acl(kazoo, path: str) -> list[tuple[str, str, int]]:
    """The ACL of `path` as (scheme, id, perms) entries; none when the controller may not read it (NoNodeError
    when it is gone)."""
    try:
        acl_list, _ = kazoo.get_acls(path)
    except NoAuthError:
        return []
    return [(entry.id.scheme, entry.id.id, entry.perms) for entry in acl_list]


def broker_info(registration: schema.BrokerRegistration, broker_epoch: int) -> BrokerInfo:
    """What the controller keeps of a registration; `broker_epoch` is its znode's czxid."""
    return BrokerInfo(registration.broker_id, registration.host, registration.port, registration.rack, broker_epoch,
                      lost_partitions(registration), offline_partitions(registration),
                      unclean_start=registration.unclean_start,
                      min_insync_replicas_default=registration.min_insync_replicas_default,
                      kafka_port=registration.kafka_port)


def offline_partitions(registration: schema.BrokerRegistration) -> frozenset[TopicPartition]:
    """The replicas the broker has in offline log directories (handlers/log_dirs.py)."""
    return frozenset(TopicPartition(topic, partition) for topic, partition in registration.offline_partitions)


def lost_partitions(registration: schema.BrokerRegistration) -> frozenset[TopicPartition]:
    """The partitions whose committed records the broker lost in an unclean shutdown (docs/durability.md)."""
    return frozenset(TopicPartition(topic, partition) for topic, partition in registration.lost_partitions)
