"""The records source's two sides: planning on the driver, fetching on the executors.

    spark.read.format("replog").option("bootstrap.servers", "127.0.0.1:9092").option("subscribe", "orders").load()

Driver: one replog Consumer (started at "latest", so its fetcher idles at the end of every
partition) gives the subscribed topics' partitions (``Consumer.assignment()``) and each one's log
start and high watermark (ListOffsets at the leader); offsets.py turns the options into ranges and
pieces. Executors: each piece is read by a Consumer of its own assigned to that one partition from
the piece's start, until its position reaches the piece's end; records at or past the end are
dropped. Records reach Spark as Arrow record batches, one per fetched chunk, so no Python row
objects are built. The Consumer returns committed records only (up to the HW), from the leader.

The stream reader's offsets are ``{topic: {partition: next offset}}``: Spark writes a micro-batch's
end to its checkpoint before the batch runs, and a restarted query re-plans the same [start, end)
pieces from it, which is what lets an idempotent sink see every record exactly once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition

from replog.spark.records import offsets as ofs

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int, headers array<struct<key: string, value: binary>>")
RECORDS_PER_PIECE_MAX_DEFAULT = 1_000_000
# Options only one kind of read uses; the other refuses them rather than ignore them (as Spark's Kafka source
# refuses endingOffsets in a stream): a stream runs until stopped, a batch read has no triggers.
BATCH_ONLY_OPTIONS = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
STREAM_ONLY_OPTIONS = ("maxOffsetsPerTrigger",)
# The brokers to call: our name, and Spark's Kafka source's, so a Kafka job's options carry over.
BOOTSTRAP_OPTIONS = ("bootstrap.servers", "kafka.bootstrap.servers")
TLS_OPTIONS = ("tls_ca_file", "tls_cert_file", "tls_key_file", "insecure")
# Every option a records read takes (the batch-only and stream-only ones are refused by the other reader with
# their own reason); any other name is refused rather than ignored: Spark's Kafka source options replog does
# not serve (assign, subscribePattern, failOnDataLoss, minOffsetsPerTrigger, ...) included.
RECORDS_OPTIONS = (*BOOTSTRAP_OPTIONS, "subscribe", "startingOffsets", "startingTimestamp",
                   "startingOffsetsByTimestamp", "maxRecordsPerPartition", "fetchMaxBytes", "stallTimeoutMs",
                   *TLS_OPTIONS, *BATCH_ONLY_OPTIONS, *STREAM_ONLY_OPTIONS)
STALL_TIMEOUT_MS_DEFAULT = 120_000  # a piece whose records stop coming for this long fails its task


@dataclass(frozen=True)
class Connection:
    """How executors and driver reach the brokers (picklable: it travels with every piece)."""

    bootstrap: str
    tls: object  # TlsFiles or None
    insecure: bool
    fetch_max_bytes: int
    stall_timeout_ms: int

    def consumer(self, topics, **kwargs):
        from replog.client import Consumer

        return Consumer(self.bootstrap, topics, tls=self.tls, insecure=self.insecure,
                        fetch_max_bytes=self.fetch_max_bytes, **kwargs)


@dataclass(frozen=True)
class Piece(InputPartition):
    """One Spark task's input: [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int


def bootstrap_of(options) -> str | None:
    """The broker addresses, under either name of BOOTSTRAP_OPTIONS; both given must name the same brokers."""
    given = {name: options.get(name) for name in BOOTSTRAP_OPTIONS if options.get(name)}
    if len({tuple(a.strip() for a in value.split(",")) for value in given.values()}) > 1:
        raise ValueError(f"the replog records source was given {' and '.join(given)} with different brokers "
                         f"({' vs '.join(repr(v) for v in given.values())}): give one of them")
    return next(iter(given.values()), None)


def tls_of(options):
    """The TLS files the source calls the cluster with (None: plaintext), from its options ``tls_ca_file``,
    ``tls_cert_file``, ``tls_key_file`` and ``insecure``, else as every client resolves them (security/local.py);
    the errors name these options, not the command line's flags."""
    from replog.common.security.local import TlsSettingNames, resolve_client_tls

    names = TlsSettingNames(*TLS_OPTIONS)
    flag = str(options.get(names.insecure, "false")).strip().lower()
    if flag not in ("true", "false"):
        raise ValueError(f"insecure: expected true or false, not {options.get(names.insecure)!r}")
    files = [options.get(name) for name in names.files()]
    if flag == "true" and any(files):
        given = [name for name, path in zip(names.files(), files) if path]
        raise ValueError(f"insecure=true (plaintext) and {', '.join(given)} (TLS) contradict each other: give one")
    return resolve_client_tls(*files, insecure=flag == "true", names=names)


def options_of(options) -> tuple[Connection, list[str]]:
    bootstrap = bootstrap_of(options)
    topics = [t.strip() for t in (options.get("subscribe") or "").split(",") if t.strip()]
    if not bootstrap:
        raise ValueError("the replog records source needs .option('bootstrap.servers', 'host:port[,host:port]') "
                         "(or kafka.bootstrap.servers)")
    if not topics:
        raise ValueError("the replog records source needs .option('subscribe', 'topic[,topic]')")
    tls = tls_of(options)
    connection = Connection(bootstrap, tls, tls is None, int(options.get("fetchMaxBytes", 4 * 1024 * 1024)),
                            int(options.get("stallTimeoutMs", STALL_TIMEOUT_MS_DEFAULT)))
    return connection, topics


def refuse_unknown_options(options, accepted: tuple[str, ...], what: str) -> None:
    """Fail, naming every option of ``options`` (Spark's case-insensitive map) that is not in ``accepted``."""
    known = {name.lower() for name in accepted}
    unknown = sorted(name for name in options if name.lower() not in known)
    if unknown:
        raise ValueError(f"the replog source does not know {', '.join(unknown)} for {what}; "
                         f"it takes {', '.join(accepted)}")


def refuse_options(options, names: tuple[str, ...], why: str) -> None:
    """Fail, naming each of ``names`` that ``options`` holds: a read that would otherwise ignore them."""
    given = [name for name in names if name in options]
    if given:
        raise ValueError(f"the replog records source does not take {', '.join(given)} here: {why}")


def partition_bounds(connection: Connection, topics: list[str]) -> dict[tuple[str, int], ofs.Bounds]:
    """Every partition of ``topics`` with its log start and high watermark, now."""
    from replog.client import EARLIEST, LATEST

    consumer = connection.consumer(topics, start=LATEST)  # positions: each partition's HW (ListOffsets LATEST)
    try:
        return {(tp.topic, tp.partition): ofs.Bounds(consumer.offset_of(tp, EARLIEST), consumer.position(tp))
                for tp in consumer.assignment()}
    finally:
        consumer.close()


def offsets_at_times(connection: Connection, topics: list[str], targets: dict[tuple[str, int], int],
                     bounds: dict[tuple[str, int], ofs.Bounds]) -> dict[tuple[str, int], int]:
    """Each target partition's first offset stamped at or after its time (ListOffsets by timestamp)."""
    if not targets:
        return {}
    from replog.client import LATEST, TopicPartition

    consumer = connection.consumer(topics, start=LATEST)
    try:
        found = consumer.offsets_for_times({TopicPartition(t, p): stamp for (t, p), stamp in targets.items()})
    finally:
        consumer.close()
    return ofs.at_times({(tp.topic, tp.partition): offset for tp, offset in found.items()}, bounds)


class Positions:
    """Where reads start (or end): the offsets option, overridden by the timestamp options."""

    def __init__(self, options, which: str, default: str) -> None:
        self.which, self.default = which, default
        self.offsets = ofs.parse_spec(options.get(f"{which}Offsets"), default, f"{which}Offsets")
        self.times = ofs.parse_timestamps(options.get(f"{which}Timestamp"),
                                          options.get(f"{which}OffsetsByTimestamp"), which)

    def resolve(self, connection: Connection, topics: list[str],
                bounds: dict[tuple[str, int], ofs.Bounds]) -> dict[tuple[str, int], int]:
        out = ofs.resolve(self.offsets, bounds, self.default, f"{self.which}Offsets")
        if self.times is not None:
            targets = ofs.timestamp_targets(self.times, bounds, f"{self.which}OffsetsByTimestamp")
            out.update(offsets_at_times(connection, topics, targets, bounds))
        return out


def pieces_of(offset_ranges: list[ofs.OffsetRange], records_per_piece_max: int) -> list[Piece]:
    return [Piece(r.topic, r.partition, r.start, r.end) for r in ofs.split(offset_ranges, records_per_piece_max)]


class RecordsBatchReader(DataSourceReader):
    def __init__(self, options) -> None:
        refuse_options(options, STREAM_ONLY_OPTIONS, "only a streaming read (spark.readStream) has triggers")
        refuse_unknown_options(options, RECORDS_OPTIONS, "a read of records")
        self.connection, self.topics = options_of(options)
        self.starting = Positions(options, "starting", ofs.EARLIEST)
        self.ending = Positions(options, "ending", ofs.LATEST)
        self.records_per_piece_max = int(options.get("maxRecordsPerPartition", RECORDS_PER_PIECE_MAX_DEFAULT))

    def partitions(self) -> list[InputPartition]:
        bounds = partition_bounds(self.connection, self.topics)
        starts = self.starting.resolve(self.connection, self.topics, bounds)
        ends = self.ending.resolve(self.connection, self.topics, bounds)
        pieces = pieces_of(ofs.ranges(starts, ends, bounds), self.records_per_piece_max)
        return pieces or [InputPartition(None)]  # nothing to read: one empty task

    def read(self, partition) -> Iterator:
        if isinstance(partition, Piece):
            yield from read_piece(self.connection, partition)


class RecordsStreamReader(DataSourceStreamReader):
    def __init__(self, options) -> None:
        refuse_options(options, BATCH_ONLY_OPTIONS, "a streaming read (spark.readStream) runs until it is "
                       "stopped; give an end to a batch read (spark.read)")
        refuse_unknown_options(options, RECORDS_OPTIONS, "a read of records")
        self.connection, self.topics = options_of(options)
        self.starting = Positions(options, "starting", ofs.LATEST)
        self.records_per_piece_max = int(options.get("maxRecordsPerPartition", RECORDS_PER_PIECE_MAX_DEFAULT))
        per_trigger = options.get("maxOffsetsPerTrigger")
        self.per_trigger = int(per_trigger) if per_trigger else None

    def initialOffset(self) -> dict:
        bounds = partition_bounds(self.connection, self.topics)
        return ofs.to_json_form(self.starting.resolve(self.connection, self.topics, bounds))

    def latestOffset(self, start: dict, limit) -> dict:
        from pyspark.sql.streaming.datasource import ReadMaxRows

        bounds = partition_bounds(self.connection, self.topics)
        starts = ofs.from_json_form(start)
        for key, bound in bounds.items():
            starts.setdefault(key, bound.log_start)  # a partition added since: from its beginning
        records_max = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        latest = {key: bound.high_watermark for key, bound in bounds.items()}
        return ofs.to_json_form(ofs.capped(starts, latest, records_max))

    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        return ReadAllAvailable() if self.per_trigger is None else ReadMaxRows(self.per_trigger)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        starts = ofs.from_json_form(start)
        ends = ofs.from_json_form(end)
        if any(key not in starts for key in ends):  # partitions added since the last batch: from their start
            bounds = partition_bounds(self.connection, self.topics)
            starts.update({key: bounds[key].log_start for key in ends if key not in starts and key in bounds})
        ranges = [ofs.OffsetRange(topic, partition, starts.get((topic, partition), stop), stop)
                  for (topic, partition), stop in sorted(ends.items()) if stop > starts.get((topic, partition), stop)]
        return pieces_of(ranges, self.records_per_piece_max)

    def read(self, partition) -> Iterator:
        yield from read_piece(self.connection, partition)

    def commit(self, end: dict) -> None:
        pass  # the offsets live in Spark's checkpoint; the brokers keep nothing for this reader


def read_piece(connection: Connection, piece: Piece) -> Iterator:
    """The records [start, end) of one partition as Arrow record batches (on an executor)."""
    import pyarrow as pa

    if piece.end <= piece.start:
        return
    schema = arrow_schema(pa)
    consumer = connection.consumer(piece.topic, partitions=[piece.partition], start=piece.start,
                                   max_wait_ms=200)
    try:
        position = piece.start
        progress_at = time.monotonic()
        while position < piece.end:
            records = [r for r in consumer.poll(200) if r.offset < piece.end]
            if records:
                position = consumer.position(piece.partition)
                progress_at = time.monotonic()
                yield to_arrow(pa, schema, records)
            else:
                position = consumer.position(piece.partition)
            if position < piece.end and time.monotonic() - progress_at > connection.stall_timeout_ms / 1000:
                raise TimeoutError(f"{piece.topic}-{piece.partition}: no record at or after offset {position} "
                                   f"within {connection.stall_timeout_ms} ms (reading up to {piece.end})")
    finally:
        consumer.close()


def arrow_schema(pa):
    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    return pa.schema([pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
                      pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
                      pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32()),
                      pa.field("headers", pa.list_(header))])


def to_arrow(pa, schema, records) -> object:
    """One Arrow batch of ConsumerRecords; timestampType as Kafka numbers it (0 CreateTime, 1 LogAppendTime)."""
    from replog.common.core.timestamp_type import TimestampType

    CREATE_TIME = TimestampType.CREATE_TIME  # noqa: N806
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array([r.topic for r in records], pa.string()),
        pa.array([r.partition for r in records], pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp_ms * 1000 for r in records], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array([0 if r.timestamp_type is CREATE_TIME else 1 for r in records], pa.int32()),
        pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records], schema.field("headers").type),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)
