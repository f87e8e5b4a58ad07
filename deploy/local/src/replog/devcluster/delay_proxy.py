"""A slow, lossy link between two hosts of a multi-host cluster, for kernels without `sch_netem`.

Where the kernel has netem (`tc qdisc add dev eth0 root netem delay 100ms loss 5%` inside a namespace),
`netem_available` says so and `delay_link` uses it on the source host's interface. Where it has not (this
project's CI kernel), `delay_link` puts a TCP proxy in the path: an nftables `nat` rule in the source host's
namespace sends its new connections to target:port to a proxy listening in that namespace, which connects
on to target:port itself (its sockets are marked so that the rule lets them through) and relays the bytes
both ways. Connections made before the rule would bypass it, so a second rule resets them: their owner
reconnects, through the proxy.

What the proxy models, per chunk of bytes it reads (one read of at most CHUNK_BYTES):
- delay: the chunk is passed on `delay_ms` after it arrived, plus a uniform jitter of up to `jitter_ms`;
- loss: with probability `loss`, a chunk is held `retransmit_ms` more, as TCP would resend a lost segment
  after its retransmission timeout (a lost packet is a stall on a TCP stream, never a hole);
- reordering: TCP hands bytes over in order, so chunks of one connection are never reordered; the jitter
  reorders what different connections deliver relative to each other.
"""

from __future__ import annotations

import contextlib
import queue
import random
import socket
import threading
import time
from dataclasses import dataclass
from typing import Iterator

from replog.devcluster.hosts import INNER_LINK
from replog.devcluster.netns import HostNetwork, in_namespace, make_in, nft_apply, run

CHUNK_BYTES = 16 * 1024
PROXY_MARK = 0x5E1  # SO_MARK of the proxy's own connections, which the redirect lets through
_SO_MARK = getattr(socket, "SO_MARK", 36)


def netem_available(network: HostNetwork, host: str) -> bool:
    """True when the kernel has netem (tried, and removed again, on `host`'s interface)."""
    namespace = network.namespace(host)
    tried = in_namespace(namespace, "tc", "qdisc", "add", "dev", INNER_LINK, "root", "netem", "delay", "1ms",
                         check=False)
    if tried.returncode == 0:
        in_namespace(namespace, "tc", "qdisc", "del", "dev", INNER_LINK, "root", check=False)
    return tried.returncode == 0


@dataclass(frozen=True)
class LinkShape:
    delay_ms: float
    jitter_ms: float = 0.0
    loss: float = 0.0           # probability that a chunk is "lost" and resent after retransmit_ms
    retransmit_ms: float = 200.0  # Linux's minimum TCP retransmission timeout

    def __post_init__(self) -> None:
        if self.delay_ms < 0 or self.jitter_ms < 0 or self.retransmit_ms < 0 or not 0 <= self.loss <= 1:
            raise ValueError(f"a link shape needs delays >= 0 and a loss in [0, 1], not {self}")


class DelayProxy:
    """Relays connections accepted on a socket in `namespace` to target:port, delaying every chunk."""

    def __init__(self, namespace: str, listen_host: str, target: tuple[str, int], shape: LinkShape,
                 rng: random.Random) -> None:
        self.namespace, self.target, self.shape, self._rng = namespace, target, shape, rng
        self._closing = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.connections = 0  # how many connections it has relayed
        self._listener = make_in(namespace, lambda: socket.create_server((listen_host, 0)))
        self.port = self._listener.getsockname()[1]
        self._spawn(self._accept_loop, "accept")

    def _spawn(self, target, name: str, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=f"delay-proxy-{name}", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                inbound, _ = self._listener.accept()
            except OSError:
                return
            try:
                outbound = make_in(self.namespace, self._dial)
            except OSError:
                inbound.close()
                continue
            with self._lock:
                self._sockets += [inbound, outbound]
                self.connections += 1
            for source, sink, direction in ((inbound, outbound, "out"), (outbound, inbound, "back")):
                pending: queue.Queue = queue.Queue(maxsize=1024)
                self._spawn(self._read, f"read-{direction}", source, pending)
                self._spawn(self._deliver, f"deliver-{direction}", sink, pending)

    def _dial(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, _SO_MARK, PROXY_MARK)
        sock.settimeout(10)
        sock.connect(self.target)
        sock.settimeout(None)
        return sock

    def _due(self, previous: float) -> float:
        shape, rng = self.shape, self._rng
        extra_ms = shape.delay_ms + rng.uniform(0, shape.jitter_ms)
        if shape.loss and rng.random() < shape.loss:
            extra_ms += shape.retransmit_ms
        return max(previous, time.monotonic() + extra_ms / 1000)  # one connection's bytes stay in order

    def _read(self, source: socket.socket, pending: queue.Queue) -> None:
        due = 0.0
        while not self._closing.is_set():
            try:
                chunk = source.recv(CHUNK_BYTES)
            except OSError:
                chunk = b""
            due = self._due(due)
            while not self._closing.is_set():  # a full queue holds the reader back, as a full TCP window would
                try:
                    pending.put((due, chunk), timeout=0.1)
                    break
                except queue.Full:
                    continue
            if not chunk:
                return

    def _deliver(self, sink: socket.socket, pending: queue.Queue) -> None:
        while not self._closing.is_set():
            try:
                due, chunk = pending.get(timeout=0.1)
            except queue.Empty:
                continue
            while (wait_s := due - time.monotonic()) > 0 and not self._closing.is_set():
                self._closing.wait(wait_s)  # the link's delay itself, cut short when the proxy closes
            if self._closing.is_set():
                return
            try:
                if not chunk:
                    sink.shutdown(socket.SHUT_WR)
                    return
                sink.sendall(chunk)
            except OSError:
                return

    def close(self) -> None:
        self._closing.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in threads:
            thread.join(timeout=5)


@contextlib.contextmanager
def delay_link(network: HostNetwork, source: str, target: str, port: int, shape: LinkShape,
               seed: int = 0) -> Iterator[DelayProxy | None]:
    """`source`'s connections to `target`:`port` delayed (and made lossy) by `shape` while the `with` lasts;
    yields the proxy (None where netem does the work instead)."""
    for host in (source, target):
        if host not in network.hosts:
            raise ValueError(f"{host!r} is not a host of this cluster: one of {', '.join(network.hosts)}")
    namespace = network.namespace(source)
    if netem_available(network, source):
        yield from _netem(namespace, network.address(target), port, shape)
        return
    proxy = DelayProxy(namespace, network.address(source), (network.address(target), port), shape,
                       random.Random(seed))
    table = f"replog_delay_{proxy.port}"
    match = f"ip daddr {network.address(target)} tcp dport {port} meta mark != {PROXY_MARK}"
    divert = f"{match} dnat to {network.address(source)}:{proxy.port}"
    nft_apply(namespace, f"""table ip {table} {{
  chain divert {{ type nat hook output priority -100; policy accept; {divert}; }}
  chain reset_direct {{ type filter hook output priority 0; policy accept; {match} reject with tcp reset; }}
}}
""")
    try:
        yield proxy
    finally:
        in_namespace(namespace, "nft", "delete", "table", "ip", table, check=False)
        proxy.close()


def _netem(namespace: str, target: str, port: int, shape: LinkShape) -> Iterator[None]:
    """netem on the one flow: a prio qdisc whose third band is delayed, and a filter sending target:port there."""
    tc = ("ip", "netns", "exec", namespace, "tc")
    spec = ["delay", f"{shape.delay_ms}ms", f"{shape.jitter_ms}ms", "loss", f"{shape.loss * 100}%"]
    run(*tc, "qdisc", "add", "dev", INNER_LINK, "root", "handle", "1:", "prio")
    try:
        run(*tc, "qdisc", "add", "dev", INNER_LINK, "parent", "1:3", "handle", "30:", "netem", *spec)
        run(*tc, "filter", "add", "dev", INNER_LINK, "protocol", "ip", "parent", "1:0", "prio", "3", "u32",
            "match", "ip", "dst", f"{target}/32", "match", "ip", "dport", str(port), "0xffff", "flowid", "1:3")
        yield None
    finally:
        run(*tc, "qdisc", "del", "dev", INNER_LINK, "root", check=False)
