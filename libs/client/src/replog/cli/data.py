"""`replog produce` and `replog consume`: try the data path by hand.

Both find the brokers through the gateway's DescribeCluster (or take them from
`--bootstrap-server`, and then need no gateway), then talk to the partition leaders
directly with the client library. How records are read from and printed as lines (input
formats, headers, timestamps, key and value formats): record_lines.py.
"""

from __future__ import annotations

import json
import sys
import time

from replog.cli import record_lines
from replog.cli.output import CliError
from replog.common.records import CODECS
from replog.v1 import admin_pb2, admin_pb2_grpc


def _common(command) -> None:
    command.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]",
                         help="brokers to start from (default: the live brokers the gateway names)")
    command.add_argument("--key-format", choices=record_lines.VALUE_FORMATS, default="text",
                         help="how keys are written: text (utf-8), hex or base64 (default text)")


def add_parsers(sub) -> None:
    produce = sub.add_parser("produce", help="send lines from stdin as records")
    produce.add_argument("--topic", required=True)
    _common(produce)
    produce.add_argument("--value-format", choices=record_lines.VALUE_FORMATS, default="text",
                         help="how values (and a JSON line's header values) are written: text (utf-8), hex or "
                              "base64 (default text)")
    # Two spellings of one flag: Kafka's console producer says --compression-type, the bench and the Node
    # example --compression.
    produce.add_argument("--compression-type", "--compression", dest="compression_type", choices=sorted(CODECS),
                         default="none",
                         help="compress each batch (default none; a topic's compression.type may store another)")
    produce.add_argument("--partition", type=int, help="fixed partition (default: by key, else round robin)")
    produce.add_argument("--key-separator", metavar="SEP",
                         help="text input: split each line into key SEP value (e.g. ':'); default: no key")
    produce.add_argument("--input-format", choices=record_lines.INPUT_FORMATS, default="text",
                         help="text: each line is a value; json: each line is "
                              '{"key": .., "value": .., "headers": {..}, "timestamp_ms": ..} (only value required)')
    produce.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                         help="a header for every record (repeatable)")
    produce.add_argument("--acks", choices=["0", "1", "all"], default="all")
    produce.add_argument("--no-idempotence", action="store_true", help="plain retries (duplicates possible)")
    produce.set_defaults(run=run_produce)
    consume = sub.add_parser("consume", help="print records to stdout")
    consume.add_argument("--topic", required=True)
    _common(consume)
    consume.add_argument("--partition", type=int, action="append", help="partition(s) to read (default all)")
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    start.add_argument("--offset", type=int, help="start at this offset (with one --partition)")
    start.add_argument("--from-timestamp", metavar="T",
                       help="start at the first record stamped at or after T (milliseconds since the Unix epoch, "
                            "or ISO 8601 such as 2026-11-26T08:30:00Z)")
    consume.add_argument("--reset-out-of-range", action="store_true",
                         help="an offset below the log start (deleted by retention or delete-records) resumes at "
                              "the start instead of failing")
    consume.add_argument("--group", metavar="G",
                         help="join consumer group G: read the partitions it assigns from its committed offsets "
                              "(else from the latest, or the earliest with --from-beginning) and commit what "
                              "was printed")
    consume.add_argument("--follow", "-f", action="store_true", help="keep waiting for new records")
    consume.add_argument("--max-records", type=int, help="stop after this many records")
    consume.add_argument("--timeout-ms", type=int, default=2000,
                         help="without --follow, stop when nothing arrives for this long (default 2000)")
    consume.add_argument("--print-key", action="store_true")
    consume.add_argument("--print-offset", action="store_true", help="print partition:offset")
    consume.add_argument("--print-timestamp", action="store_true",
                         help="print CreateTime:<ms> or LogAppendTime:<ms> (the topic's message.timestamp.type)")
    consume.add_argument("--print-headers", action="store_true", help="print headers as k1:v1,k2:v2 (or NO_HEADERS)")
    consume.add_argument("--value-format", choices=record_lines.VALUE_FORMATS, default="text",
                         help="how values and header values print (default text)")
    consume.set_defaults(run=run_consume)


def data_brokers(args, channel) -> list[str]:
    """--bootstrap-server's brokers, else the live brokers the gateway names."""
    if getattr(args, "bootstrap_server", None):
        from replog.client.metadata import bootstrap_addresses

        try:
            return bootstrap_addresses(args.bootstrap_server)
        except ValueError as exc:
            raise CliError(f"--bootstrap-server: {exc}") from None
    return brokers(channel)


def brokers(channel) -> list[str]:
    reply = admin_pb2_grpc.AdminServiceStub(channel).DescribeCluster(admin_pb2.DescribeClusterRequest(), timeout=10)
    alive = [f"{b.host}:{b.port}" for b in reply.brokers if b.alive]
    if not alive:
        raise CliError("no live broker in the cluster")
    return alive


def run_produce(args, channel) -> int:
    from replog.client import ProduceError, Producer

    try:
        extra_headers = [record_lines.parse_header_argument(h) for h in args.header]
    except record_lines.LineError as exc:
        raise CliError(str(exc)) from None
    acks = -1 if args.acks == "all" else int(args.acks)
    idempotent = acks == -1 and not args.no_idempotence
    try:
        producer = Producer(data_brokers(args, channel), acks=acks, idempotent=idempotent, tls=args.tls,
                            insecure=args.tls is None, compression_type=args.compression_type)
    except (ProduceError, KeyError) as exc:
        raise CliError(str(exc)) from None
    futures = []
    try:
        for number, line in enumerate(sys.stdin, 1):
            try:
                key, value, headers, timestamp_ms = record_lines.parse_line(
                    line.rstrip("\n"), args.input_format, args.key_separator, extra_headers,
                    key_format=args.key_format, value_format=args.value_format)
                futures.append(producer.send(args.topic, value, key=key, headers=headers, timestamp_ms=timestamp_ms,
                                             partition=args.partition))
            except ProduceError as exc:  # an unknown topic
                raise CliError(str(exc)) from None
            except (TypeError, ValueError) as exc:  # LineError, or headers the format refuses
                raise CliError(f"line {number}: {exc} (the lines before it were sent)") from None
        try:
            producer.flush(60)
        except TimeoutError as exc:
            raise CliError(f"{exc} (is the partition's leader alive and its ISR at min.insync.replicas?)") from None
    finally:
        try:
            producer.close(timeout_s=0.1)
        except TimeoutError:
            pass
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:
        raise CliError(f"{len(failed)} of {len(futures)} record(s) failed, first: {failed[0]}")
    last = {}
    for future in futures:
        meta = future.result()
        last[meta.partition] = meta.offset
    summary = {"records": len(futures), "last_offsets": {str(k): v for k, v in sorted(last.items())}}
    if args.output == "json":
        print(json.dumps(summary))
    else:
        print(f"produced {len(futures)} record(s) to {args.topic}", file=sys.stderr)
    return 0


def run_consume(args, channel) -> int:
    from replog.client import EARLIEST, LATEST, ClientError, Consumer

    if args.offset is not None and (not args.partition or len(args.partition) != 1):
        raise CliError("--offset needs exactly one --partition")
    if args.group is not None and (args.partition or args.offset is not None or args.from_timestamp):
        raise CliError("--group reads the partitions the group assigns, from its committed offsets: "
                       "it takes no --partition, --offset or --from-timestamp")
    start = args.offset if args.offset is not None else (EARLIEST if args.from_beginning else LATEST)
    try:
        start_timestamp_ms = None if args.from_timestamp is None else record_lines.parse_timestamp(args.from_timestamp)
    except record_lines.LineError as exc:
        raise CliError(str(exc)) from None
    try:
        if args.group is not None:
            consumer = Consumer(data_brokers(args, channel), args.topic, group_id=args.group, enable_auto_commit=False,
                                auto_offset_reset=EARLIEST if args.from_beginning else LATEST,
                                client_id="replog-cli", tls=args.tls, insecure=args.tls is None)
        else:
            consumer = Consumer(data_brokers(args, channel), args.topic, partitions=args.partition, start=start,
                                start_timestamp_ms=start_timestamp_ms, tls=args.tls, insecure=args.tls is None,
                                reset_out_of_range=args.reset_out_of_range)
    except (ClientError, KeyError) as exc:
        raise CliError(str(exc).strip("'\"")) from None
    count = 0
    idle_since = time.monotonic()
    try:
        while args.max_records is None or count < args.max_records:
            batch = consumer.poll(500)
            if batch or (args.group is not None and not consumer.assignment()):
                idle_since = time.monotonic()  # a group member is idle only once it has partitions
            elif not args.follow and (time.monotonic() - idle_since) * 1000 >= args.timeout_ms:
                break
            printed = []
            for record in batch:
                if args.max_records is not None and count >= args.max_records:
                    break
                count += 1
                printed.append(record)
                if args.output == "json":
                    print(json.dumps(record_lines.record_as_json(record, args.value_format, args.key_format)),
                          flush=True)
                    continue
                print(record_lines.record_as_text(
                    record, value_format=args.value_format, timestamp=args.print_timestamp, offset=args.print_offset,
                    headers=args.print_headers, key=args.print_key, key_format=args.key_format), flush=True)
            if args.group is not None and printed:
                commit_printed(consumer, printed)
    except ClientError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return 0


def commit_printed(consumer, printed) -> None:
    """Commit the offset after the last record printed of each partition (a record cut off by
    --max-records was not printed, so it is read again next time)."""
    from replog.common.core.partitions import TopicPartition

    consumer.commit({TopicPartition(r.topic, r.partition): r.offset + 1 for r in printed})
