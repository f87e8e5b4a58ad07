"""What TLS costs ZooKeeper's clients: one server with both a plaintext and a TLS client port, the plaintext
figures being the floor of the TLS ones in the same run.

Measured: opening a session (kazoo's start, and the wire-level handshake the bulk reader, multi writer
and change feed use: TCP, TLS, connect request), sequentially, the median of SESSIONS; the bulk reader's
GetData of ZNODES znodes of VALUE_BYTES each (as the controller's full load reads partition states); the
multi writer's SetData of the same znodes in transactions of 1,000 (as after a broker failure).

    .venv/bin/python bench/zk_tls.py [--sessions 40] [--znodes 10000]

Prints one JSON object: per measure, plaintext and TLS milliseconds and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from replog.common.security import local
from replog.common.zk import bulk, session
from replog.common.zk import multi_writer as mw
from replog.common.zk.auth import ZkEndpoint
from replog.devcluster import tls, zookeeper
from replog.devcluster.ports import free_port

VALUE_BYTES = 100
BATCH = 1000


def start_server(directory: Path) -> tuple[subprocess.Popen, int, int]:
    """A standalone server with a TLS client port and, beside it, a plaintext one."""
    tls_port, plain_port = free_port(), free_port()
    tls.prepare(directory, [], zookeepers={"zookeeper": ""})
    config = zookeeper.write_config(directory, tls_port, tls=tls.zookeeper_server_tls(directory, "zookeeper"))
    config.write_text(config.read_text() + f"clientPort={plain_port}\nclientPortAddress=127.0.0.1\n")
    log = open(directory / "zookeeper.log", "wb")
    process = subprocess.Popen(zookeeper.zookeeper_command(config), stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while zookeeper.mode("127.0.0.1", plain_port) is None:  # serving (`ruok` answers before it is)
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"ZooKeeper did not start; see {directory / 'zookeeper.log'}")
        time.sleep(0.1)
    return process, plain_port, tls_port


def median_ms(action, count: int) -> float:
    action()  # the first of each kind warms the server's code path (and, for TLS, its JIT) up
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def kazoo_session(endpoint: ZkEndpoint) -> None:
    client = KazooClient(**endpoint.kazoo_args())
    client.start(timeout=15)
    client.stop()
    client.close()


def wire_session(endpoint: ZkEndpoint) -> None:
    servers, _ = session.parse_connect(endpoint.connect)
    sock, _, _ = session.connect(servers, 10.0, tls=endpoint.tls)
    session.close_session(sock)


def timed_ms(action) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def warm_then_timed_ms(action) -> float:
    """The second run of `action` (the first warms the server's code path up)."""
    action()
    return timed_ms(action)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--znodes", type=int, default=10000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zk-tls-bench-") as name:
        directory = Path(name)
        process, plain_port, tls_port = start_server(directory)
        try:
            operator = local.files_of(directory, local.OPERATOR)
            plain = ZkEndpoint(f"127.0.0.1:{plain_port}")
            secure = ZkEndpoint(f"127.0.0.1:{tls_port}", None, operator)
            paths = [f"/bench/n{i}" for i in range(args.znodes)]
            writer = mw.MultiWriter(plain, session_timeout_s=10)
            try:
                writer.commit([[mw.Create("/bench")]])
                writer.commit([[mw.Create(p, b"v" * VALUE_BYTES) for p in paths[i:i + BATCH]]
                               for i in range(0, len(paths), BATCH)])
            finally:
                writer.close()
            figures = {}
            for measure, action in (
                ("kazoo_session_ms", lambda e: median_ms(lambda: kazoo_session(e), args.sessions)),
                ("wire_session_ms", lambda e: median_ms(lambda: wire_session(e), args.sessions)),
                ("bulk_get_ms", lambda e: warm_then_timed_ms(lambda: bulk.get_many(e, paths))),
                ("multi_set_ms", lambda e: timed_ms(lambda: _set_all(e, paths))),
            ):
                floor, cost = action(plain), action(secure)
                figures[measure] = {"plaintext": round(floor, 2), "tls": round(cost, 2),
                                    "ratio": round(cost / floor, 2) if floor else None}
        finally:
            process.kill()
            process.wait()
    print(json.dumps({"benchmark": "zk_tls", "sessions": args.sessions, "znodes": args.znodes,
                      "value_bytes": VALUE_BYTES, **figures}))


def _set_all(endpoint: ZkEndpoint, paths: list[str]) -> None:
    writer = mw.MultiWriter(endpoint, session_timeout_s=10)
    try:
        results = writer.commit([[mw.SetData(p, b"w" * VALUE_BYTES) for p in paths[i:i + BATCH]]
                                 for i in range(0, len(paths), BATCH)])
        assert all(code == mw.OK for result in results for code in result)
    finally:
        writer.close()


if __name__ == "__main__":
    main()
