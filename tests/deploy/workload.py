"""The deployment tests' client: produce, consume and write through a failover, run inside a container on
the cluster's network with the client installed from the wheel (no repository on its path). It finds its
certificate in REPLOG_TLS_* and prints one JSON object.

    workload.py produce  --bootstrap B --topic T --count N [--first K]     acks=all, idempotent
    workload.py consume  --bootstrap B --topic T --expect-file F           every value in F, once each
    workload.py steady   --bootstrap B --topic T --seconds S --first K --out F
        one record at a time, each acknowledged before the next; a line per record in F:
        {"value": i, "sent_at": .., "acked_at": ..} (epoch seconds), so the harness sees when writes
        stopped and resumed
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def value_of(i: int) -> bytes:
    return b"record-%09d" % i


def produce(args) -> dict:
    from replog.client import Producer

    started = time.monotonic()
    acked = []
    with Producer(args.bootstrap, acks="all") as producer:
        handles = [(i, producer.send(args.topic, value_of(i))) for i in range(args.first, args.first + args.count)]
        producer.flush(120)
        for i, handle in handles:
            if handle.exception() is None:
                acked.append(i)
    return {"sent": args.count, "acked": len(acked), "first": args.first, "acked_values": [acked[0], acked[-1]]
            if acked else [], "seconds": round(time.monotonic() - started, 3), "all_acked": len(acked) == args.count}


def consume(args) -> dict:
    from replog.client import EARLIEST, Consumer

    expected = set(json.loads(open(args.expect_file).read()))
    seen: dict[int, int] = {}
    started = time.monotonic()
    deadline = started + args.timeout_s
    with Consumer(args.bootstrap, args.topic, start=EARLIEST, iteration_timeout_ms=5000) as consumer:
        while time.monotonic() < deadline and not expected <= seen.keys():
            for record in consumer:
                number = int(record.value.removeprefix(b"record-"))
                seen[number] = seen.get(number, 0) + 1
                if expected <= seen.keys():
                    break
    missing = sorted(expected - seen.keys())
    return {"consumed": sum(seen.values()), "distinct": len(seen), "expected": len(expected),
            "missing": len(missing), "missing_sample": missing[:10],
            "duplicates": sum(1 for n in seen.values() if n > 1), "seconds": round(time.monotonic() - started, 3)}


def steady(args) -> dict:
    from replog.client import Producer

    stop_at = time.monotonic() + args.seconds
    acked = failed = 0
    i = args.first
    with open(args.out, "w") as out, Producer(args.bootstrap, acks="all", linger_ms=0) as producer:
        while time.monotonic() < stop_at:
            sent_at = time.time()
            try:
                producer.send(args.topic, value_of(i)).result(timeout=60)
            except Exception as exc:  # noqa: BLE001 - the harness reads what failed, it needs no traceback
                failed += 1
                out.write(json.dumps({"value": i, "sent_at": sent_at, "failed": type(exc).__name__}) + "\n")
            else:
                acked += 1
                out.write(json.dumps({"value": i, "sent_at": sent_at, "acked_at": time.time()}) + "\n")
            out.flush()
            i += 1
    return {"acked": acked, "failed": failed, "last": i - 1}


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("produce", "consume", "steady"):
        command = sub.add_parser(name)
        command.add_argument("--bootstrap", required=True, type=lambda s: s.split(","))
        command.add_argument("--topic", required=True)
    sub.choices["produce"].add_argument("--count", type=int, required=True)
    sub.choices["produce"].add_argument("--first", type=int, default=0)
    sub.choices["consume"].add_argument("--expect-file", required=True)
    sub.choices["consume"].add_argument("--timeout-s", type=float, default=300)
    sub.choices["steady"].add_argument("--seconds", type=float, required=True)
    sub.choices["steady"].add_argument("--first", type=int, required=True)
    sub.choices["steady"].add_argument("--out", required=True)
    args = parser.parse_args()
    result = {"produce": produce, "consume": consume, "steady": steady}[args.command](args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
