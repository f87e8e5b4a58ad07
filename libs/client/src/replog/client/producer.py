"""Producer: batching, leader discovery, retries and idempotence (KIP-98).

`send()` writes a record into its partition's open batch and returns a light handle
shaped like a Future (results.SendHandle: one small object per record, one Event per
batch); `send_batch()` appends many with one Future. A record without a partition goes
where Kafka's default partitioner puts it (partitioner.py). The work is split as in Kafka's
producer:

- accumulator.py holds the batches: open ones fill until full or `linger_ms`, and
  it decides which ready batches may leave now (in-flight limits, each partition's
  order, a partition recovering from a failed batch);
- sender.py is the one thread that sends them: it stamps each batch once with its
  producer id, epoch and base sequence, sends one request per leader broker over
  that broker's ProduceStream, completes the futures, retries what failed, and
  follows new leaders through metadata;
- this module is the API, and gets the producer id before the sender starts.

Up to `max_in_flight` batches per partition are in flight (5 by default; at most 5
with idempotence). A batch that fails with a retriable error is retried with the
same bytes and the same sequence; with idempotence the leader recognises a batch it
already has and answers with its original offset, so a retry never writes a record
twice.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import Future

from replog.client.accumulator import Accumulator
from replog.client.metadata import MetadataCache
from replog.client.partitioner import StickyPartitioner, partition_for_key
from replog.client.results import ProduceError, RecordMetadata, SendHandle, UnknownTopicError
from replog.client.sender import Sender
from replog.common import records as rec
from replog.common.security.files import TlsFiles
from replog.v1 import common_pb2, log_pb2

__all__ = ["ProduceError", "Producer", "RecordMetadata", "SendHandle"]  # all but Producer: from results.py

MAX_IN_FLIGHT_IDEMPOTENT = 5  # the broker's producer state keeps a producer's last 5 batches (BATCHES_KEPT)
MAX_IN_FLIGHT = 100
_ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}


class Producer:
    """Sends records to a cluster's partition leaders, batched, in order per partition.

    `acks`: "all" (-1, the default: the ISR has the record), 1 (the leader has it) or 0; `idempotent`
    (needs "all"): retries never write a record twice; `linger_ms`: how long an open batch waits for
    more records; `batch_records_max` / `batch_bytes_max`: when a batch is full;
    `buffered_records_max`: `send` blocks while this many records wait for their answers;
    `max_in_flight`: requests in flight per partition; `compression_type`: "none" (the default),
    "gzip", "snappy", "lz4" or "zstd", each batch's records compressed as one block (a topic whose
    compression.type is not `producer` is stored with its own codec whatever the producer sends).
    A context manager: leaving it closes the producer, which first delivers what is buffered."""

    def __init__(
        self,
        bootstrap: str | list[str],
        *,
        acks: int | str = "all",
        compression_type: str | None = "none",
        idempotent: bool = True,
        linger_ms: int = 2,
        batch_records_max: int = 2000,
        batch_bytes_max: int = 1024 * 1024,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        buffered_records_max: int = 1_000_000,
        max_in_flight: int = 5,
        metadata_max_age_ms: int = 300_000,
        metadata_timeout_ms: int = 1000,
        tls: TlsFiles | None = None,
        insecure: bool = False,
    ) -> None:
        """`bootstrap`: broker addresses, a list or one "host:port[,host:port...]" string; `tls`: the CA,
        certificate and key to call the brokers with (default: found as security/local.py says);
        `insecure`: plaintext, for a cluster run with --insecure."""
        self.compression = rec.codec_of(compression_type or "none")  # ValueError names the known ones
        acks = _ACKS.get(acks, acks) if isinstance(acks, str) else acks
        if acks not in (0, 1, -1):
            raise ValueError(f"acks must be 0, 1, -1 or \"all\", not {acks!r}")
        if idempotent and acks != -1:
            raise ValueError("an idempotent producer needs acks=-1 (all)")
        if not 1 <= max_in_flight <= (MAX_IN_FLIGHT_IDEMPOTENT if idempotent else MAX_IN_FLIGHT):
            raise ValueError(f"max_in_flight must be 1 to {MAX_IN_FLIGHT_IDEMPOTENT} with idempotence (a broker "
                             f"remembers a producer's last {MAX_IN_FLIGHT_IDEMPOTENT} batches per partition) or 1 "
                             f"to {MAX_IN_FLIGHT} without, not {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.metadata = MetadataCache(bootstrap, timeout_s=metadata_timeout_ms / 1000, tls=tls, insecure=insecure)
        self.acks = acks
        self.idempotent = idempotent
        self.linger_s = linger_ms / 1000
        self.batch_records_max = batch_records_max
        self.batch_bytes_max = batch_bytes_max
        self.request_timeout_s = request_timeout_ms / 1000
        self.delivery_timeout_s = delivery_timeout_ms / 1000
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.retry_backoff_max_s = max(retry_backoff_max_ms, retry_backoff_ms) / 1000
        self.metadata_max_age_s = metadata_max_age_ms / 1000
        self.producer_id, self.producer_epoch = -1, -1
        self._accumulator = Accumulator(max_in_flight=max_in_flight, linger_s=self.linger_s,
                                        batch_records_max=batch_records_max, batch_bytes_max=batch_bytes_max,
                                        buffered_records_max=buffered_records_max)
        self._sticky = StickyPartitioner(random.Random())
        self._partition_counts: dict[str, int] = {}
        if idempotent:
            self._init_producer_id()
        self._sender = Sender(self._accumulator, self.metadata, acks=acks, idempotent=idempotent,
                              producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                              request_timeout_s=self.request_timeout_s, delivery_timeout_s=self.delivery_timeout_s,
                              retry_backoff_s=self.retry_backoff_s, retry_backoff_max_s=self.retry_backoff_max_s,
                              metadata_max_age_s=self.metadata_max_age_s, compression=self.compression)
        self._sender.start()

    # --- API -------------------------------------------------------------------------------

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, headers: rec.Headers | None = None,
             timestamp_ms: int | None = None, partition: int | None = None) -> SendHandle:
        """Add one record to its partition's open batch; the handle gives its RecordMetadata
        (`handle.result(timeout)`, or `handle.add_done_callback(fn)`), shaped like a Future.

        `value` None with a `key` is a tombstone: on a compacted topic (cleanup.policy=compact) it
        deletes the key, and the cleaner removes it after delete.retention.ms; it reads back as a
        record whose value is None.
        `partition`: default Kafka's partitioner (partitioner.py): murmur2 of the key, or the
        topic's sticky partition for a record without a key.
        `headers`: (key, value) pairs or a mapping, keys non-empty str, values bytes or None
        (TypeError / ValueError at once when not, or past the format's bounds);
        `timestamp_ms`: the record's create time (default now; a topic with
        message.timestamp.type=LogAppendTime replaces it with the leader's clock).
        A topic the cluster does not have raises UnknownTopicError (a ProduceError) at once."""
        sticky = partition is None and key is None
        if partition is None:
            count = self._partition_counts.get(topic) or self._partition_count(topic)
            partition = partition_for_key(key, count) if key is not None else self._sticky.partition(topic, count)
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        size = (0 if value is None else len(value)) + 24
        if key is not None:
            size += len(key)
        if headers:
            size += len(rec.encode_headers(headers))  # checks them too, before anything is buffered
        append = self._accumulator.append
        handle, wake = append(topic, partition, key, value, timestamp_ms, headers, size, sticky)
        if handle is None:  # the sticky partition's batch is gone: stick to another one, in a new batch
            partition = self._sticky.next_partition(topic, partition, count)
            handle, wake = append(topic, partition, key, value, timestamp_ms, headers, size)
        if wake:
            self._sender.wake()
        return handle

    def _partition_count(self, topic: str) -> int:
        try:
            count = self._partition_counts[topic] = self.metadata.partition_count(topic)
        except KeyError:
            raise UnknownTopicError(common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                                    f"topic {topic!r} does not exist (or has no metadata yet)") from None
        return count

    def send_batch(self, topic: str, values: list[bytes], *, partition: int, key: bytes | None = None,
                   timestamp_ms: int | None = None) -> Future:
        """Send many records with one future, which gives the first record's RecordMetadata.

        For callers that already hold many records (bulk loads, benchmarks): the records
        join the partition's open batch like `send` would add them (so small calls made
        while a request is in flight still travel together), minus one future per record.
        A call that would push the open batch past `batch_bytes_max` starts a new batch;
        one call must fit in `batch_bytes_max` itself (a broker refuses larger batches).
        """
        if not values:
            raise ValueError("send_batch needs at least one record")
        stamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        key_bytes = len(key) if key else 0
        size = sum(len(v) for v in values) + (key_bytes + 24) * len(values)
        if size > self.batch_bytes_max:
            raise ValueError(f"{len(values)} records take about {size} bytes, more than batch_bytes_max "
                             f"{self.batch_bytes_max}; split the call")
        future: Future = Future()
        if self._accumulator.add_many(topic, partition, key, values, stamp, size, future):
            self._sender.wake()
        return future

    def flush(self, timeout_s: float | None = None) -> None:
        """Send every open batch now and wait until every record sent so far is answered (written or
        failed: see each handle); TimeoutError after `timeout_s` (default: no limit)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._accumulator.ready_all()
        self._sender.wake()
        self._accumulator.wait_until_delivered(deadline, timeout_s)

    def close(self, timeout_s: float | None = None) -> None:
        """Deliver what is buffered (up to `timeout_s`, default the delivery timeout), then stop."""
        try:
            self.flush(self.delivery_timeout_s if timeout_s is None else timeout_s)
        finally:
            self._accumulator.close()
            self._sender.stop()
            self.metadata.close()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- start-up --------------------------------------------------------------------------------

    def _init_producer_id(self) -> None:
        deadline = time.monotonic() + self.request_timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                self.metadata.refresh()
                stub = self.metadata.stub(self.metadata.any_broker())
                reply = stub.InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                                            timeout=self.request_timeout_s)
                if reply.error_code == common_pb2.ERROR_CODE_NONE:
                    self.producer_id, self.producer_epoch = reply.producer_id, reply.producer_epoch
                    return
                last = reply.error_message
            except Exception as exc:  # noqa: BLE001 - retried until the deadline
                last = str(exc)
            time.sleep(self.retry_backoff_s)
        raise ProduceError(common_pb2.ERROR_CODE_REQUEST_TIMED_OUT, f"could not get a producer id: {last}")
