"""Builds the Kafka listener from the broker's parts (called by bootstrap.py)."""

from __future__ import annotations

import random

from replog.broker.config import BrokerConfig
from replog.broker.control.topic_configs import TopicConfigs
from replog.broker.kafka.access import Access
from replog.broker.kafka.handlers import KafkaHandlers
from replog.broker.kafka.server import KafkaListener
from replog.broker.kafka.topic_admin import KafkaTopicAdmin
from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.enforcement import Enforcer
from replog.common.security.files import TlsFiles
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

KAFKA_LISTENER_OFF = -1


def build_kafka_listener(config: BrokerConfig, tls: TlsFiles | None, authorizer: Authorizer, *, metadata,
                         log_servicer, group_servicer, zk: ZkClient, topic_config_defaults: dict[str, str],
                         topic_configs: TopicConfigs, request_bytes_max: int) -> KafkaListener | None:
    """The listener, bound to `kafka_port` but not yet accepting (its `start`); None when the port is -1."""
    if config.kafka_port == KAFKA_LISTENER_OFF:
        return None
    access = Access(Enforcer(authorizer) if tls is not None else None)

    def topic_overrides(topic: str) -> dict[str, str]:
        found = zk.get(schema.topic_config_path(topic))
        return {} if found is None else dict(schema.TopicConfigRecord.decode(topic, found[0]).config)

    handlers = KafkaHandlers(broker_id=config.broker_id, metadata=metadata, log_servicer=log_servicer,
                             group_servicer=group_servicer, access=access, topic_overrides=topic_overrides,
                             topic_config_defaults=topic_config_defaults,
                             topic_admin=KafkaTopicAdmin(zk, metadata, random.Random()),
                             batch_bytes_max=lambda topic: min(config.message_max_bytes,
                                                               topic_configs.log_config(topic).max_batch_bytes))
    return KafkaListener(host=config.host, port=config.kafka_port, tls=tls, dispatch=handlers,
                         request_bytes_max=request_bytes_max, connections_max=config.kafka_connections_max,
                         principal_connections_max=config.kafka_principal_connections_max,
                         idle_ms=config.kafka_connections_max_idle_ms,
                         super_users=frozenset(config.super_user_principals))
