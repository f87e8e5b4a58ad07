"""The floor of an acks=all write at a fixed rate: the same exchanges as replog's, with nothing else.

    .venv/bin/python bench/floor_chain.py --rate-mb-per-s 10 --seconds 10 --leader sync

An acks=all produce on replog is a chain of gRPC stream messages between four
processes: the producer sends a request to the leader; the leader wakes the
long-polling fetches of both followers and answers them with the new bytes;
each follower sends its next fetch, which tells the leader its new end offset;
when both have, the leader answers the producer. This runs that chain on raw
bytes streams and nothing else (no records, no log, no disk, no checks): a
leader process, two follower processes pulling as replog's fetchers do, and a
producer here that hands the leader one millisecond's bytes every
millisecond, with one request in flight (what arrives during a round trip
leaves in the next request), as `produce.py`'s latency mode does. The
latencies are per millisecond's bytes, from the tick to the answer that covers
them, so they compare one to one with `produce.py --rate-mb-per-s`.

`--leader sync` serves the leader on the threaded gRPC server replog's
services use (each stream has a handler thread, the server a poller thread);
`--leader aio` serves it on grpc.aio, all streams on one event loop thread.
The followers and the producer are threaded gRPC clients in both cases, as
replog's fetchers and producer are.

Used by `produce.py` (latency mode) as `floor_acks_all_chain_ms`; run alone,
it prints one JSON object.

`--work-us P,I,O,F` adds busy Python (a spin that holds the interpreter lock)
where replog does its own work: P µs on the leader per produce request (the
append), I per fetch request in (the follower's new end offset, the HW), O per
fetch answer out (the read for the follower), F on a follower per answer (its
append). It answers how much Python per cycle the latency goal leaves room for,
and whether another threading model would change that (`--leader aio` with the
same work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import struct
import subprocess
import sys
import threading
import time
from typing import NamedTuple

from replog.common import cpu_scheduling, grpc_runtime

grpc_runtime.configure()  # before grpc loads: this process and its children run gRPC as the services do

import grpc  # noqa: E402

_U64 = struct.Struct(">Q")
MIB = 1024 * 1024
OPTIONS = [("grpc.max_receive_message_length", 64 * MIB), ("grpc.max_send_message_length", 64 * MIB),
           ("grpc.enable_retries", 0)]


def _identity(message: bytes) -> bytes:
    return message


class Work(NamedTuple):
    """Busy Python, in µs, at each place replog works (`--work-us`); all 0 for the floor itself."""

    produce: int = 0
    fetch_in: int = 0
    fetch_out: int = 0
    follower: int = 0

    @classmethod
    def parse(cls, text: str) -> Work:
        return cls(*(int(part) for part in text.split(",")))

    def flag(self) -> str:
        return ",".join(str(value) for value in self)


WORK = Work()  # this process's, set from --work-us in the children


def _busy(us: int) -> None:
    """Spin for `us` µs holding the interpreter lock, as Python work does."""
    if us:
        until = time.perf_counter() + us / 1e6
        while time.perf_counter() < until:
            pass


# --- the leader -------------------------------------------------------------------------------------
#
# Produce stream: each request is an 8-byte id and a payload; it is "appended" (its end offset is the
# bytes appended so far) and answered with its id once both followers have fetched past it.
# Fetch stream: each request is the follower's 8-byte end offset (its id is the first byte of the
# stream's first request); the answer is every byte after it, sent once there is any.


class _SyncLeader:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.data = bytearray()
        self.follower_ends = [0, 0]
        self.waiting: list[tuple[int, bytes, queue.SimpleQueue]] = []  # (end offset, id, answers)

    def _complete_locked(self) -> None:
        acked = min(self.follower_ends)
        while self.waiting and self.waiting[0][0] <= acked:
            _, request_id, answers = self.waiting.pop(0)
            answers.put(request_id)

    def produce(self, request_iterator, context):
        answers: queue.SimpleQueue = queue.SimpleQueue()

        def read() -> None:
            for message in request_iterator:
                _busy(WORK.produce)
                with self.cond:
                    self.data += message[8:]
                    self.waiting.append((len(self.data), message[:8], answers))
                    self.cond.notify_all()
            answers.put(None)

        threading.Thread(target=read, daemon=True).start()
        yield from iter(answers.get, None)

    def fetch(self, request_iterator, context):
        follower = None
        for message in request_iterator:
            if follower is None:
                follower, message = message[0], message[1:]
            offset = _U64.unpack(message)[0]
            _busy(WORK.fetch_in)
            with self.cond:
                self.follower_ends[follower] = offset
                self._complete_locked()
                while len(self.data) <= offset and context.is_active():
                    self.cond.wait(0.5)
                chunk = bytes(self.data[offset:])
            _busy(WORK.fetch_out)
            yield chunk


def _serve_sync() -> None:
    from concurrent import futures

    leader = _SyncLeader()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=OPTIONS)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("chain.Leader", {
        "Produce": grpc.stream_stream_rpc_method_handler(leader.produce, _identity, _identity),
        "Fetch": grpc.stream_stream_rpc_method_handler(leader.fetch, _identity, _identity),
    }),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop(0)


def _serve_aio() -> None:
    import asyncio

    data = bytearray()
    follower_ends = [0, 0]
    waiting: list[tuple[int, bytes, asyncio.Queue]] = []
    appended = asyncio.Event()

    def complete() -> None:
        acked = min(follower_ends)
        while waiting and waiting[0][0] <= acked:
            _, request_id, answers = waiting.pop(0)
            answers.put_nowait(request_id)

    async def produce(request_iterator, context):
        nonlocal appended
        answers: asyncio.Queue = asyncio.Queue()

        async def read() -> None:
            nonlocal appended
            async for message in request_iterator:
                _busy(WORK.produce)
                data.extend(message[8:])
                waiting.append((len(data), message[:8], answers))
                appended.set()
                appended = asyncio.Event()
            answers.put_nowait(None)

        reader = asyncio.ensure_future(read())
        try:
            while (answer := await answers.get()) is not None:
                yield answer
        finally:
            reader.cancel()

    async def fetch(request_iterator, context):
        follower = None
        async for message in request_iterator:
            if follower is None:
                follower, message = message[0], message[1:]
            offset = _U64.unpack(message)[0]
            _busy(WORK.fetch_in)
            follower_ends[follower] = offset
            complete()
            while len(data) <= offset:
                await appended.wait()
            _busy(WORK.fetch_out)
            yield bytes(data[offset:])

    async def serve() -> None:
        server = grpc.aio.server(options=OPTIONS)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("chain.Leader", {
            "Produce": grpc.stream_stream_rpc_method_handler(produce, _identity, _identity),
            "Fetch": grpc.stream_stream_rpc_method_handler(fetch, _identity, _identity),
        }),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(port, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await server.stop(0)

    asyncio.run(serve())


# --- a follower ---------------------------------------------------------------------------------------

def _follow(port: int, follower: int) -> None:
    """Fetch from the leader in turns until stdin closes, as a replica fetcher does."""
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as channel:
        outgoing: queue.SimpleQueue = queue.SimpleQueue()
        responses = channel.stream_stream("/chain.Leader/Fetch", _identity, _identity)(iter(outgoing.get, None))
        threading.Thread(target=lambda: (sys.stdin.read(), responses.cancel()), daemon=True).start()
        end = 0
        outgoing.put(bytes([follower]) + _U64.pack(end))
        with contextlib.suppress(grpc.RpcError):
            for chunk in responses:
                _busy(WORK.follower)
                end += len(chunk)
                outgoing.put(_U64.pack(end))


def _follow_aio(port: int, follower: int) -> None:
    import asyncio

    async def run() -> None:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as channel:
            call = channel.stream_stream("/chain.Leader/Fetch", _identity, _identity)()
            loop = asyncio.get_running_loop()
            loop.run_in_executor(None, lambda: (sys.stdin.read(), loop.call_soon_threadsafe(call.cancel)))
            end = 0
            await call.write(bytes([follower]) + _U64.pack(end))
            with contextlib.suppress(grpc.RpcError, asyncio.CancelledError):
                while True:
                    chunk = await call.read()
                    if chunk is grpc.aio.EOF:
                        return
                    _busy(WORK.follower)
                    end += len(chunk)
                    await call.write(_U64.pack(end))

    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(run())


# --- the producer (this process) ------------------------------------------------------------------------

@contextlib.contextmanager
def _child(*args: str):
    child = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        yield child
    finally:
        child.stdin.close()
        child.wait(timeout=10)


def measure(rate_mb_per_s: float, seconds: float, leader: str = "sync", warm_up_s: float = 1.0,
            follower: str = "sync", work: Work = Work()) -> dict[str, float]:
    """p50 / p99 (ms) from each millisecond's tick to the leader's answer covering its bytes; `work` is
    the busy Python the leader and the followers add (`--work-us`), none for the floor."""
    tick_bytes = int(rate_mb_per_s * 1_000_000 / 1000)
    payload = bytes(tick_bytes)
    latencies: list[float] = []
    with contextlib.ExitStack() as stack:
        leader_process = stack.enter_context(_child("--serve", leader, "--work-us", work.flag()))
        port = int(leader_process.stdout.readline())
        follower_kind = follower
        for follower in (0, 1):
            stack.enter_context(_child("--follow-aio" if follower_kind == "aio" else "--follow", str(port),
                                       str(follower), "--work-us", work.flag()))
        channel = stack.enter_context(grpc.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS))
        outgoing: queue.SimpleQueue = queue.SimpleQueue()
        responses = channel.stream_stream("/chain.Leader/Produce", _identity, _identity)(iter(outgoing.get, None))
        lock = threading.Lock()
        due: list[float] = []  # tick times not sent yet
        in_flight: dict[int, list[float]] = {}
        idle = threading.Event()
        idle.set()
        next_id = 0
        measuring_from = time.perf_counter() + warm_up_s

        def send_locked() -> None:
            nonlocal next_id
            ticks = due[:]
            due.clear()
            in_flight[next_id] = ticks
            idle.clear()
            outgoing.put(_U64.pack(next_id) + payload * len(ticks))
            next_id += 1

        def read_answers() -> None:
            with contextlib.suppress(grpc.RpcError):
                for answer in responses:
                    now = time.perf_counter()
                    with lock:
                        ticks = in_flight.pop(_U64.unpack(answer)[0])
                        latencies.extend((now - t) * 1000 for t in ticks if t >= measuring_from)
                        if due:
                            send_locked()
                        else:
                            idle.set()

        reader = threading.Thread(target=read_answers, daemon=True)
        reader.start()
        started = time.perf_counter()
        tick = 0
        while time.perf_counter() - started < warm_up_s + seconds:
            with lock:
                due.append(time.perf_counter())
                if idle.is_set():
                    send_locked()
            tick += 1
            time.sleep(max(0.0, started + tick * 0.001 - time.perf_counter()))
        idle.wait(10)
        outgoing.put(None)
        reader.join(timeout=10)
        responses.cancel()
    from harness import percentile  # here, not at the top: the child processes need none of it

    return {"p50": round(percentile(latencies, 0.50), 3), "p99": round(percentile(latencies, 0.99), 3),
            "leader": leader, "follower": follower_kind, "ticks": len(latencies),
            **({"work_us": work._asdict()} if any(work) else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate-mb-per-s", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--leader", choices=("sync", "aio"), default="sync")
    parser.add_argument("--follower", choices=("sync", "aio"), default="sync")
    parser.add_argument("--follow-aio", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve", choices=("sync", "aio"), help=argparse.SUPPRESS)
    parser.add_argument("--follow", nargs=2, type=int, metavar=("PORT", "ID"), help=argparse.SUPPRESS)
    parser.add_argument("--work-us", type=Work.parse, default=Work(), metavar="P,I,O,F",
                        help="busy Python in µs: leader per produce request, per fetch request in, per fetch "
                             "answer out; follower per answer (default: none, the bare floor)")
    args = parser.parse_args()
    global WORK
    WORK = args.work_us
    if args.serve == "sync":
        _serve_sync()
    elif args.serve == "aio":
        _serve_aio()
    elif args.follow_aio:
        _follow_aio(*args.follow_aio)
    elif args.follow:
        _follow(*args.follow)
    else:
        print(json.dumps(measure(args.rate_mb_per_s, args.seconds, args.leader, follower=args.follower,
                                 work=args.work_us)))


if __name__ == "__main__":
    # Scheduled as the services are, before any thread. When produce.py imports this module, it
    # chooses the policy itself; the chain's processes started from here inherit it either way.
    cpu_scheduling.configure()
    main()
