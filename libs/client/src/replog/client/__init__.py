"""replog's Python client library: producer, consumer and leader discovery."""

from replog.client.consumer import EARLIEST, LATEST, Consumer, ConsumerRecord
from replog.client.metadata import MetadataCache, NoBrokerReachable
from replog.client.producer import ProduceError, Producer, RecordMetadata

__all__ = ["Consumer", "ConsumerRecord", "EARLIEST", "LATEST", "MetadataCache", "NoBrokerReachable",
           "ProduceError", "Producer", "RecordMetadata"]
