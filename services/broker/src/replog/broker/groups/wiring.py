"""Builds the group coordinator and its servicer from the broker's parts (called by bootstrap.py)."""

from __future__ import annotations

import random

from replog.broker.config import BrokerConfig
from replog.broker.entrypoints.group_servicer import GroupServicer
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.groups.coordinator import GroupCoordinator
from replog.broker.groups.core.model import GroupPolicy
from replog.broker.groups.offsets_log import OffsetsLog
from replog.broker.groups.offsets_topic import OffsetsTopicCreator
from replog.broker.produce.produce_handler import ProduceHandler
from replog.broker.runtime.metrics import BrokerMetrics
from replog.common.clock import Clock
from replog.common.core.internal_topics import OFFSETS_TOPIC
from replog.common.zk.client import ZkClient


def build_groups(config: BrokerConfig, *, produce: ProduceHandler, lookup, metadata: MetadataCache, zk: ZkClient,
                 clock: Clock, metrics: BrokerMetrics) -> tuple[GroupCoordinator, GroupServicer]:
    policy = GroupPolicy(session_timeout_ms_min=config.group_min_session_timeout_ms,
                         session_timeout_ms_max=config.group_max_session_timeout_ms,
                         initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                         members_max=config.group_max_size)
    offsets_log = OffsetsLog(produce, lookup, config.request_timeout_ms, clock.now_ms)
    coordinator = GroupCoordinator(offsets_log, policy, clock, lambda: metadata.partition_count(OFFSETS_TOPIC),
                                   metrics)

    def high_watermark(tp):
        hosted = lookup(tp)
        return None if hosted is None or not hosted.usable else hosted.replica.high_watermark

    metrics.watch_groups(lambda: coordinator.metric_rows(high_watermark))
    offsets_topic = OffsetsTopicCreator(zk, config.offsets_topic_num_partitions,
                                        config.offsets_topic_replication_factor, random.Random(),
                                        segment_bytes=config.offsets_topic_segment_bytes)
    servicer = GroupServicer(coordinator=coordinator, metadata=metadata, now_ms=clock.now_ms,
                             offsets_topic=offsets_topic)
    return coordinator, servicer
