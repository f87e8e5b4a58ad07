"""The network faults themselves, seen from sockets on three bare hosts (no services): what each fault lets through,
that it heals when its `with` ends, and what the delay proxy does to a round trip."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from replog.devcluster.delay_proxy import LinkShape, delay_link
from replog.devcluster.netfaults import NetworkFaults
from replog.devcluster.netns import HostNetwork, make_in

pytestmark = pytest.mark.fault

PORT = 7000
WAIT_S = 1.0  # how long a probe waits for a datagram that a working link delivers in well under a millisecond


@pytest.fixture(scope="module")
def network(tmp_path_factory):
    network = HostNetwork.create(tmp_path_factory.mktemp("bare-hosts"), ["broker-1", "broker-2", "broker-3"])
    yield network
    network.destroy()


@pytest.fixture(scope="module")
def receivers(network):
    """A UDP socket bound on each host, and one in the root namespace."""
    sockets = {host: make_in(network.namespace(host), lambda host=host: _bound(network.address(host)))
               for host in network.hosts}
    sockets["root"] = _bound(network.layout.root_address)
    yield sockets
    for sock in sockets.values():
        sock.close()


def _bound(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, PORT))
    sock.settimeout(WAIT_S)
    return sock


def reaches(network, receivers, source: str, target: str) -> bool:
    """True when a datagram from `source` arrives at `target` (either may be "root")."""
    sender = receivers[source]
    address = network.layout.root_address if target == "root" else network.address(target)
    token = f"{source}->{target}@{time.monotonic_ns()}".encode()
    try:
        sender.sendto(token, (address, PORT))
    except OSError:
        return False
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            if receivers[target].recv(256) == token:
                return True
        except socket.timeout:
            return False
    return False


def links(network, receivers, pairs) -> dict[tuple[str, str], bool]:
    return {(a, b): reaches(network, receivers, a, b) for a, b in pairs}


ENDS = ("broker-1", "broker-2", "broker-3", "root")
ALL = [(a, b) for a in ENDS for b in ENDS if a != b]


def test_every_host_reaches_every_other_and_the_root_namespace(network, receivers):
    assert links(network, receivers, ALL) == {pair: True for pair in ALL}


def test_an_isolated_host_reaches_nobody_and_nobody_reaches_it_until_the_heal(network, receivers):
    with NetworkFaults(network).isolate("broker-1"):
        seen = links(network, receivers, ALL)
    assert seen == {(a, b): "broker-1" not in (a, b) for a, b in ALL}
    assert links(network, receivers, ALL) == {pair: True for pair in ALL}


def test_a_cut_separates_one_host_from_a_set_both_ways_and_no_more(network, receivers):
    with NetworkFaults(network).cut("broker-1", ["broker-2", "broker-3"]):
        seen = links(network, receivers, ALL)
    cut = {("broker-1", "broker-2"), ("broker-2", "broker-1"), ("broker-1", "broker-3"), ("broker-3", "broker-1")}
    assert seen == {pair: pair not in cut for pair in ALL}
    assert links(network, receivers, ALL) == {pair: True for pair in ALL}


def test_a_one_way_cut_drops_one_direction_only(network, receivers):
    with NetworkFaults(network).cut("broker-1", ["broker-2"], one_way=True):
        seen = links(network, receivers, ALL)
    assert seen == {pair: pair != ("broker-1", "broker-2") for pair in ALL}


def test_a_fault_naming_an_unknown_host_or_no_one_is_refused(network):
    faults = NetworkFaults(network)
    with pytest.raises(ValueError, match="not a host"):
        with faults.isolate("broker-9"):
            pass
    with pytest.raises(ValueError, match="from whom"):
        with faults.cut("broker-1", []):
            pass


@pytest.fixture
def echo_server(network):
    """A TCP echo server on broker-2."""
    listener = make_in(network.namespace("broker-2"), lambda: socket.create_server((network.address("broker-2"),
                                                                                     PORT + 1)))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(1024):
                    conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield PORT + 1
    listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    thread.join(timeout=5)


def round_trip_s(network) -> float:
    """One byte from broker-1 to broker-2's echo server and back, on a new connection."""
    sock = make_in(network.namespace("broker-1"), lambda: socket.create_connection((network.address("broker-2"),
                                                                                      PORT + 1), timeout=10))
    with sock:
        started = time.monotonic()
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"
        return time.monotonic() - started


def test_the_delay_proxy_delays_each_direction_and_a_lost_chunk_costs_a_retransmission(network, echo_server):
    with delay_link(network, "broker-1", "broker-2", echo_server, LinkShape(delay_ms=100)) as proxy:
        delayed = round_trip_s(network)
        assert proxy is None or proxy.connections == 1
    with delay_link(network, "broker-1", "broker-2", echo_server,
                    LinkShape(delay_ms=50, loss=1.0, retransmit_ms=300)):
        lossy = round_trip_s(network)
    direct = round_trip_s(network)
    assert delayed >= 0.2, f"a round trip took {delayed * 1000:.0f} ms through a link delaying 100 ms each way"
    assert lossy >= 0.7, f"a round trip took {lossy * 1000:.0f} ms with every chunk lost once (50 + 300 ms each way)"
    assert direct < delayed, "the link is not delayed once the proxy is gone"


def test_a_bad_link_shape_is_refused():
    for bad in (dict(delay_ms=-1), dict(delay_ms=1, loss=1.5), dict(delay_ms=1, jitter_ms=-2)):
        with pytest.raises(ValueError, match="link shape"):
            LinkShape(**bad)
