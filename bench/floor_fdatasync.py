"""The disk's fdatasync floor: what one durable append of a batch costs on a directory, with no broker.

    .venv/bin/python bench/floor_fdatasync.py --directory /path/on/the/disk --batch-bytes 100000

Used by `produce.py --durability durable` (and reported by every produce run), in the same
run and on the broker's own log directory, so the durable mode's figures can be read against
the least a write + fdatasync of the same batch size costs on that disk. A loop appends
`batch_bytes` to one file and fdatasyncs after each write, for `seconds`; the file is removed
afterwards. Prints (run alone) or returns `{"batch_bytes", "syncs", "syncs_per_s", "mb_per_s",
"p50_ms", "p99_ms"}`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

FILE_NAME = "fdatasync-floor.tmp"


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def floor_fdatasync(directory: Path, batch_bytes: int, seconds: float = 3.0, syncs_max: int = 100_000) -> dict:
    """Append `batch_bytes` and fdatasync, again and again, for `seconds` (at most `syncs_max` times)."""
    path = Path(directory) / FILE_NAME
    payload = os.urandom(max(1, batch_bytes))
    latencies_ms: list[float] = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline and len(latencies_ms) < syncs_max:
            before = time.perf_counter()
            os.write(fd, payload)
            os.fdatasync(fd)
            latencies_ms.append((time.perf_counter() - before) * 1000)
        elapsed_s = time.perf_counter() - started
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    syncs_per_s = len(latencies_ms) / elapsed_s if elapsed_s > 0 else 0.0
    return {
        "batch_bytes": len(payload),
        "syncs": len(latencies_ms),
        "syncs_per_s": round(syncs_per_s, 1),
        "mb_per_s": round(syncs_per_s * len(payload) / 1_000_000, 2),
        "p50_ms": round(percentile(latencies_ms, 0.50), 3),
        "p99_ms": round(percentile(latencies_ms, 0.99), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--directory", type=Path, required=True, help="a directory on the disk to measure")
    parser.add_argument("--batch-bytes", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if args.batch_bytes <= 0 or args.seconds <= 0:
        parser.error("--batch-bytes and --seconds must be positive")
    print(json.dumps(floor_fdatasync(args.directory, args.batch_bytes, args.seconds)))


if __name__ == "__main__":
    main()
