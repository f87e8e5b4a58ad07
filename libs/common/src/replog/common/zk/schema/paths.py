"""Every znode path replog uses: the constants and the functions that build and name them.

Only this module spells a path (but for the ACL bindings', which acl_bindings.py keeps with their
JSON); the JSON each znode holds is in state.py and admin.py, and layout.py says who writes each one.
"""

from __future__ import annotations

from .acl_bindings import ACLS

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
UNCLEAN_LEADER_ELECTION = "/admin/unclean_leader_election"
CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
REASSIGNMENT_THROTTLE = "/config/reassignment_throttle"

# Persistent znodes every cluster needs, parents first; created idempotently at start-up, each with the
# ACL znode_acls.py gives it, so none of them is left for a less trusted creator to make (and to choose its ACL).
# /acls (the clients' ACL bindings, acl_bindings.py) is one of them: the gateway may not create children of the root.
PERSISTENT_PATHS = (BROKERS, BROKER_IDS, TOPICS, ADMIN, DELETE_TOPICS, CONFIG, CONFIG_TOPICS, PRODUCER_ID_BLOCK, ACLS)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def parse_topic_path(path: str) -> tuple[str, str, int | None] | None:
    """Name a znode under /brokers/topics or /config/topics: ("assignment", topic, None),
    ("state", topic, partition) or ("config", topic, None); None for any other path."""
    if path.startswith(CONFIG_TOPICS + "/"):
        topic = path[len(CONFIG_TOPICS) + 1:]
        return ("config", topic, None) if topic and "/" not in topic else None
    if not path.startswith(TOPICS + "/"):
        return None
    parts = path[len(TOPICS) + 1:].split("/")
    if len(parts) == 1 and parts[0]:
        return "assignment", parts[0], None
    if len(parts) == 4 and parts[1] == "partitions" and parts[3] == "state" and parts[2].isdigit():
        return "state", parts[0], int(parts[2])
    return None

