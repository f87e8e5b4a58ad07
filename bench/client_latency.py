"""End-to-end latency for bench/client.py: `Producer.send()` to a Consumer in another process seeing the record.

The producer sends `rate_mb_per_s` of records a millisecond at a time, one `send()` each; each value
starts with the CLOCK_MONOTONIC nanoseconds of its send call (one clock for every process of the
machine). The consumer, iterating from the end of the topic in its own process (so the two do not
share an interpreter lock), takes its own clock as each record comes out and reports the p50 / p99
of the differences. Run as a script it is that consumer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

ACK_SAMPLE = 100  # one record in this many has its produce-to-ack time taken too
WARMUP_S = 1.0  # records sent in the first second are not counted (connections, first batches)


def measure(bootstrap: list[str], topic: str, rate_mb_per_s: float, seconds: float, record_bytes: int, *,
            linger_ms: int, max_in_flight: int) -> dict:
    from replog.client import Producer

    per_s = int(rate_mb_per_s * 1_000_000 / record_bytes)
    total = int(per_s * seconds)
    command = [sys.executable, __file__, ",".join(bootstrap), topic, str(total)]
    reader = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "ready"
        padding = b"x" * (record_bytes - 20)
        settings = {"acks": "all", "idempotent": True, "linger_ms": linger_ms, "max_in_flight": max_in_flight}
        with Producer(bootstrap, **settings) as producer:
            started = time.monotonic()
            sent = 0
            acks_ns: list[int] = []
            while sent < total:
                due = min(total, int((time.monotonic() - started) * per_s) + 1)
                while sent < due:
                    handle = producer.send(topic, b"%020d" % time.monotonic_ns() + padding)
                    if sent % ACK_SAMPLE == 0:
                        at_ns = time.monotonic_ns()
                        handle.add_done_callback(lambda _, at_ns=at_ns: acks_ns.append(time.monotonic_ns() - at_ns))
                    sent += 1
                next_tick = started + (sent / per_s)
                pause = next_tick - time.monotonic()
                if pause > 0:
                    time.sleep(pause)  # paces the offered load; the condition is the next record's due time
            producer.flush(60)
            elapsed_s = time.monotonic() - started
        out, _ = reader.communicate(timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
    result = json.loads(out.strip().splitlines()[-1])
    acks_ns.sort()
    result["ack_p50_ms"] = round(acks_ns[len(acks_ns) // 2] / 1e6, 2)
    result["ack_p99_ms"] = round(acks_ns[int(len(acks_ns) * 0.99)] / 1e6, 2)
    result["offered_records_per_s"] = per_s
    result["sent_records_per_s"] = round(total / elapsed_s)
    return result


def consume(bootstrap: list[str], topic: str, total: int) -> dict:
    from replog.client import LATEST, Consumer

    latencies_ns = []
    with Consumer(bootstrap, topic, start=LATEST, max_wait_ms=100, iteration_timeout_ms=30_000) as consumer:
        print("ready", flush=True)
        first_ns = None
        for record in consumer:
            now_ns = time.monotonic_ns()
            sent_ns = int(record.value[:20])
            first_ns = first_ns or sent_ns
            if sent_ns - first_ns >= WARMUP_S * 1e9:
                latencies_ns.append(now_ns - sent_ns)
            total -= 1
            if total == 0:
                break
    latencies_ns.sort()

    def at(fraction: float) -> float:
        return round(latencies_ns[min(len(latencies_ns) - 1, int(fraction * len(latencies_ns)))] / 1e6, 2)

    return {"p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": at(1.0), "counted": len(latencies_ns),
            "missing": total}


if __name__ == "__main__":
    print(json.dumps(consume(sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]))), flush=True)
