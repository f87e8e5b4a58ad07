"""The one owner of replog's ZooKeeper layout (docs/zookeeper.md is drawn from it).

Every znode path and every JSON shape is built and parsed in this package and nowhere
else, each in one module:

- `paths.py`: every path, and the functions that build and name them;
- `codec.py`: the JSON conventions (a `version` field in every value) and `ZkDataError`;
- `state.py`: the cluster's state (controller seat, brokers, topics, partition states,
  topic configs, producer-id blocks);
- `admin.py`: the requests the gateway leaves for the controller, and the reassignment throttle;
- `znode_acls.py`: the ACL of every path (who may read, write, create and delete what);
- `acl_bindings.py`: the clients' ACL bindings under /acls (their paths and JSON, together);
- `client_quotas.py`: the client quotas under /config/quotas (their paths and JSON, together);
- `layout.py`: `LAYOUT`, every path with who writes it and an example, for the reference.

Shapes follow Kafka's so existing knowledge and tools carry over. Decoders are strict: a
value that is not the expected shape raises `ZkDataError` naming the path and the problem,
because a controller acting on a misread partition state could lose data. Import from here:
`from replog.common.zk import schema`.
"""

from . import znode_acls
from .acl_bindings import (
    ACLS,
    AclChangeMarker,
    AclEntry,
    AclResourceRecord,
    acl_pattern_folder,
    acl_resource_path,
    parse_acl_resource_path,
)
from .admin import ElectionRequest, ReassignmentRequest, ReassignmentThrottle
from .client_quotas import (
    DEFAULT_USER_NODE,
    QUOTA_USERS,
    QUOTAS,
    QuotaChangeMarker,
    QuotaRecord,
    parse_quota_user_node,
    quota_user_path,
)
from .codec import ZkDataError
from .layout import ACL_PATHS, LAYOUT, Znode, acl_of_pattern
from .paths import (
    ADMIN,
    BROKER_IDS,
    BROKERS,
    CONFIG,
    CONFIG_TOPICS,
    CONTROLLER,
    CONTROLLER_EPOCH,
    DELETE_TOPICS,
    PERSISTENT_PATHS,
    PREFERRED_REPLICA_ELECTION,
    PRODUCER_ID_BLOCK,
    REASSIGN_PARTITIONS,
    REASSIGNMENT_THROTTLE,
    TOPICS,
    UNCLEAN_LEADER_ELECTION,
    broker_path,
    delete_topic_path,
    parse_topic_path,
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
    decode_controller_epoch,
    encode_controller_epoch,
)

__all__ = [
    "ACLS",
    "ACL_PATHS",
    "ADMIN",
    "BROKERS",
    "BROKER_IDS",
    "CONFIG",
    "CONFIG_TOPICS",
    "CONTROLLER",
    "CONTROLLER_EPOCH",
    "DEFAULT_USER_NODE",
    "DELETE_TOPICS",
    "LAYOUT",
    "PERSISTENT_PATHS",
    "PREFERRED_REPLICA_ELECTION",
    "PRODUCER_ID_BLOCK",
    "QUOTAS",
    "QUOTA_USERS",
    "REASSIGNMENT_THROTTLE",
    "REASSIGN_PARTITIONS",
    "TOPICS",
    "UNCLEAN_LEADER_ELECTION",
    "AclChangeMarker",
    "AclEntry",
    "AclResourceRecord",
    "BrokerRegistration",
    "ControllerRecord",
    "ElectionRequest",
    "PartitionStateRecord",
    "ProducerIdBlock",
    "QuotaChangeMarker",
    "QuotaRecord",
    "ReassignmentRequest",
    "ReassignmentThrottle",
    "TopicAssignment",
    "TopicConfigRecord",
    "ZkDataError",
    "Znode",
    "acl_of_pattern",
    "acl_pattern_folder",
    "acl_resource_path",
    "broker_path",
    "decode_controller_epoch",
    "delete_topic_path",
    "encode_controller_epoch",
    "parse_acl_resource_path",
    "parse_quota_user_node",
    "parse_topic_path",
    "partition_path",
    "partition_state_path",
    "partitions_path",
    "quota_user_path",
    "topic_config_path",
    "topic_path",
    "znode_acls",
]
