"""The gRPC floors of a produce run: what a raw gRPC stream between two local processes moves.

    .venv/bin/python bench/floor_grpc.py --message-bytes 10000

Used by `produce.py`, in the same run as its measurement, so the ratio holds on a noisy
machine; run alone, it prints one JSON object:

- `stream_mb_per_s` (`produce.py`'s floor_grpc_stream_mb_per_s): 1 MiB messages streamed over
  one raw gRPC stream (bytes, no schema, no broker), the most any gRPC transport moves on
  this machine;
- `round_trip_ms` (floor_grpc_stream_round_trip_ms): p50 / p99 of one message out and its
  echo back over an open raw stream between two processes, on the threaded gRPC stack the
  services use: the least one exchange between two of our processes can cost here;
- `aio_round_trip_ms` (floor_grpc_aio_stream_round_trip_ms): the same on grpc.aio at both
  ends, for comparison.

The server is this script in a child process (`--serve sync|aio`). Both ends run with
replog's gRPC settings (replog.common.grpc_runtime) and CPU scheduling policy
(replog.common.cpu_scheduling), as the services do; the server inherits the policy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

from replog.common import cpu_scheduling, grpc_runtime

grpc_runtime.configure()  # before grpc loads: this process and its children run gRPC as the services do

import grpc  # noqa: E402

MIB = 1024 * 1024
FLOOR_MESSAGES = 600
FLOOR_EXCHANGES = 3000  # round trips timed for the latency floor
FLOOR_WARM_UP = 200


def _identity(message: bytes) -> bytes:
    return message


def _floor_handler(sink, echo):
    return grpc.method_handlers_generic_handler("floor.Sink", {
        "Stream": grpc.stream_unary_rpc_method_handler(sink),
        "Echo": grpc.stream_stream_rpc_method_handler(echo, _identity, _identity),
    })


def _floor_server(kind: str) -> None:
    """Child process: a gRPC server with two raw bytes stream methods: Stream counts what it gets,
    Echo answers each message with itself. `kind` is "sync" (the stack replog's services run on)
    or "aio" (grpc.aio, for comparison)."""
    options = [("grpc.max_receive_message_length", 4 * MIB), ("grpc.max_send_message_length", 4 * MIB)]
    if kind == "aio":
        import asyncio

        async def sink_aio(request_iterator, context):
            total = 0
            async for message in request_iterator:
                total += len(message)
            return str(total).encode()

        async def echo_aio(request_iterator, context):
            async for message in request_iterator:
                yield message

        async def serve() -> None:
            server = grpc.aio.server(options=options)
            server.add_generic_rpc_handlers((_floor_handler(sink_aio, echo_aio),))
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            print(port, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until stdin closes
            await server.stop(0)

        asyncio.run(serve())
        return
    from concurrent import futures

    def sink(request_iterator, context):
        total = 0
        for message in request_iterator:
            total += len(message)
        return str(total).encode()

    def echo(request_iterator, context):
        yield from request_iterator

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=options)
    server.add_generic_rpc_handlers((_floor_handler(sink, echo),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop(0)


@contextlib.contextmanager
def _floor_child(kind: str = "sync"):
    """The floor server in a child process; yields its port."""
    child = subprocess.Popen([sys.executable, __file__, "--serve", kind], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        yield int(child.stdout.readline())
    finally:
        child.stdin.close()
        child.wait(timeout=10)



def floor_grpc_stream_mb_per_s() -> float:
    with _floor_child() as port:
        options = [("grpc.max_receive_message_length", 4 * MIB), ("grpc.max_send_message_length", 4 * MIB)]
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
            stream = channel.stream_unary("/floor.Sink/Stream")
            payload = os.urandom(MIB)
            stream(iter([payload] * 10), timeout=30)  # warm up the connection
            started = time.perf_counter()
            received = int(stream(iter([payload] * FLOOR_MESSAGES), timeout=120))
            seconds = time.perf_counter() - started
    assert received == FLOOR_MESSAGES * MIB, received
    return received / MIB / seconds


def floor_grpc_round_trip_ms(message_bytes: int, kind: str = "sync") -> dict[str, float]:
    """p50 / p99 of one message out and its echo back over an open raw bytes stream between two
    processes (FLOOR_EXCHANGES of them, after a warm-up), retries off as on the services'
    channels: the least one exchange between two of our processes can cost here. `kind` "sync" is the
    threaded gRPC stack replog runs on; "aio" is grpc.aio on both ends, for comparison."""
    payload = os.urandom(message_bytes)
    options = [("grpc.enable_retries", 0)]
    times: list[float] = []
    with _floor_child(kind) as port:
        if kind == "aio":
            import asyncio

            async def exchange_all() -> None:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
                    call = channel.stream_stream("/floor.Sink/Echo", _identity, _identity)()
                    for i in range(FLOOR_WARM_UP + FLOOR_EXCHANGES):
                        started = time.perf_counter()
                        await call.write(payload)
                        await call.read()
                        if i >= FLOOR_WARM_UP:
                            times.append((time.perf_counter() - started) * 1000)
                    await call.done_writing()

            asyncio.run(exchange_all())
        else:
            import queue

            with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
                outgoing: queue.SimpleQueue = queue.SimpleQueue()
                responses = channel.stream_stream("/floor.Sink/Echo", _identity, _identity)(
                    iter(outgoing.get, None))
                for i in range(FLOOR_WARM_UP + FLOOR_EXCHANGES):
                    started = time.perf_counter()
                    outgoing.put(payload)
                    next(responses)
                    if i >= FLOOR_WARM_UP:
                        times.append((time.perf_counter() - started) * 1000)
                outgoing.put(None)
                responses.cancel()
    from harness import percentile  # here, not at the top: the server process needs none of it

    return {"p50": round(percentile(times, 0.50), 3), "p99": round(percentile(times, 0.99), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--message-bytes", type=int, default=10_000,
                        help="the round trips' message (produce.py: one millisecond's records at its rate)")
    parser.add_argument("--serve", choices=("sync", "aio"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _floor_server(args.serve)
        return
    cpu_scheduling.configure()  # as the services are scheduled; the server process inherits it
    print(json.dumps({"stream_mb_per_s": round(floor_grpc_stream_mb_per_s(), 1),
                      "round_trip_ms": floor_grpc_round_trip_ms(args.message_bytes, "sync"),
                      "aio_round_trip_ms": floor_grpc_round_trip_ms(args.message_bytes, "aio"),
                      "message_bytes": args.message_bytes}))


if __name__ == "__main__":
    main()
