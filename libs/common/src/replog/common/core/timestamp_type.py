"""Whose clock a record's timestamp is from: the one definition the batch format
(replog.common.records, an attribute bit) and the topic config `message.timestamp.type`
(core/topic_config.py, its values) share. The values are Kafka's names."""

from __future__ import annotations

import enum


class TimestampType(enum.Enum):
    CREATE_TIME = "CreateTime"  # the producer's clock, when it created the record
    LOG_APPEND_TIME = "LogAppendTime"  # the leader's clock, when it appended the record's batch
