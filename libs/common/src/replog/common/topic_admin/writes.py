"""Creating and deleting a topic in ZooKeeper: read a snapshot, let the core decide, write the
decision in one version-checked transaction (zk_writes). The controller takes it from there: it
watches /brokers/topics (creating partition states) and the /admin/delete_topics marks.

Used by the admin gateway and by a broker's Kafka listener alike; each authorizes the caller
first. The ZooKeeper identity writing must hold the ACLs these writes need (znode_acls.py: the
gateway and the brokers may create under /brokers/topics, /config/topics and /admin/delete_topics).
"""

from __future__ import annotations

import random

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.common.error_codes import ErrorCode
from replog.common.topic_admin.core import topics as core
from replog.common.topic_admin.core.refusal import already_exists, not_found, precondition
from replog.common.topic_admin.zk_view import load_view
from replog.common.topic_admin.zk_writes import Conflict, commit, create_or_set, retrying
from replog.common.zk import schema
from replog.common.zk.client import ZkClient


def create_topic(zk: ZkClient, spec: core.CreateTopic, rng: random.Random, *,
                 validate_only: bool = False) -> core.TopicCreation:
    """The topic's assignment and config, written unless `validate_only`; a Refusal when it may not be."""

    def attempt() -> core.TopicCreation:
        # Every assignment is read (not states): an unknown broker is told from a dead one by them.
        creation = core.plan_create_topic(load_view(zk.endpoint), spec, rng)
        if validate_only:
            return creation
        config_path = schema.topic_config_path(creation.name)
        leftover = zk.kazoo.exists(config_path)   # a config left by an interrupted delete is replaced
        tx = zk.kazoo.transaction()
        create_or_set(tx, config_path, creation.config.encode(), leftover.version if leftover else -1,
                      zk.acl(config_path))
        topic_path = schema.topic_path(creation.name)
        tx.create(topic_path, creation.assignment.encode(), acl=zk.acl(topic_path))
        try:
            commit(tx)
        except NodeExistsError:
            if zk.kazoo.exists(schema.topic_path(creation.name)):
                raise already_exists(f"Topic '{creation.name}' already exists.",
                                     ErrorCode.TOPIC_ALREADY_EXISTS) from None
            raise Conflict() from None
        except (BadVersionError, NoNodeError):
            raise Conflict() from None
        return creation

    return retrying(attempt, f"create topic '{spec.name}'")


def delete_topic(zk: ZkClient, name: str) -> None:
    """Marks the topic for deletion (the controller deletes it); a Refusal when it does not exist."""
    core.check_delete(load_view(zk.endpoint, topics=()), name)
    mark = schema.delete_topic_path(name)
    tx = zk.kazoo.transaction()
    tx.check(schema.topic_path(name), -1)     # still exists (any version)
    tx.create(mark, acl=zk.acl(mark))
    try:
        commit(tx)
    except NoNodeError:
        raise not_found(f"Topic '{name}' does not exist.", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
    except NodeExistsError:
        raise precondition(f"Topic '{name}' is already being deleted.", ErrorCode.TOPIC_DELETION_IN_PROGRESS) from None
