"""replog's Python client library: producer, consumer (alone or in a group) and leader discovery."""

from replog.client.consumer import EARLIEST, LATEST, Consumer, ConsumerRecord
from replog.client.group.group_consumer import GroupConsumer
from replog.client.metadata import MetadataCache, NoBrokerReachable
from replog.client.producer import Producer
from replog.client.results import (
    ClientError,
    ConsumerError,
    GroupError,
    ProduceError,
    RecordMetadata,
    SendHandle,
    TruncationError,
    UnknownTopicError,
)
from replog.common.core.partitions import TopicPartition
from replog.common.core.timestamp_type import TimestampType
from replog.common.security.files import TlsFiles

__all__ = ["ClientError", "Consumer", "ConsumerError", "ConsumerRecord", "EARLIEST", "GroupConsumer", "GroupError",
           "LATEST", "MetadataCache", "NoBrokerReachable", "ProduceError", "Producer", "RecordMetadata", "SendHandle",
           "TimestampType", "TlsFiles", "TopicPartition", "TruncationError", "UnknownTopicError"]
