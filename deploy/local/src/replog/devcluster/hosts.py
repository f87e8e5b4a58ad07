"""The multi-host layout's names and addresses (`ClusterSpec.hosts`): which host each process is, and where.

A cluster of this layout owns one /24 of 10.211.0.0/16 (`10.211.<subnet>.0/24`, the subnet chosen free when
the network is made) and a short random tag that every name it makes carries, so that two clusters on one
machine never share a name:

    host                    namespace                    address
    (the root namespace)    -                            10.211.<subnet>.1   the bridge: tests, health checks
    client                  replog-<tag>-client          10.211.<subnet>.2   the CLI (`ip netns exec`)
    zookeeper (<i>)         replog-<tag>-zookeeper(-i)   10.211.<subnet>.10+i
    controller-<i>          replog-<tag>-controller-<i>  10.211.<subnet>.20+i
    gateway-<i>             replog-<tag>-gateway-<i>     10.211.<subnet>.30+i
    broker-<i>              replog-<tag>-broker-<i>      10.211.<subnet>.100+i

A ZooKeeper ensemble's servers are `zookeeper-1`, `zookeeper-2`, ... (hosts .11, .12, ...); a standalone
server is `zookeeper` (.10). Each namespace reaches the others over a veth pair whose outer end
(`rl-<tag>-<last octet>`) is a port of the bridge `rl-<tag>-br` in the root namespace; the inner end is
`eth0`. Every process of a host listens on its address, on ports fixed per role (SERVICE_PORTS).

This module only names things; `netns.py` makes and removes them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from replog.common import ports

PREFIX = "10.211"
HEX_DIGITS = "0123456789abcdef"
NAMESPACE_PREFIX = "replog-"
LINK_PREFIX = "rl-"
INNER_LINK = "eth0"
ROOT_OCTET = 1
CLIENT = "client"
CLIENT_OCTET = 2
# The first host number of each role; instance i is at base + i (a standalone ZooKeeper is instance 0).
_ROLE_BASE = {"zookeeper": 10, "controller": 20, "gateway": 30, "broker": 100}
_ROLE_LIMIT = {"zookeeper": 9, "controller": 9, "gateway": 9, "broker": 150}
# Ports on a host's own address: (service port, metrics port). Every host has an address of its own, so the
# same ports serve every instance of a role.
SERVICE_PORTS = {"zookeeper": (ports.ZOOKEEPER_CLIENT_PORT, 0),
                 **{role: (pair.grpc, pair.metrics) for role, pair in ports.BY_ROLE.items()}}


class LayoutError(ValueError):
    pass


@dataclass(frozen=True)
class HostLayout:
    """One cluster's network: its tag (a few hex digits) and its subnet number (1..254)."""

    tag: str
    subnet: int

    def __post_init__(self) -> None:
        if not (1 <= self.subnet <= 254):
            raise LayoutError(f"subnet {self.subnet} is not in 1..254")
        if not (1 <= len(self.tag) <= 6 and all(c in HEX_DIGITS for c in self.tag)):
            raise LayoutError(f"tag {self.tag!r} must be 1 to 6 lower-case hex digits")

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"{PREFIX}.{self.subnet}.0/24")

    @property
    def bridge(self) -> str:
        return f"{LINK_PREFIX}{self.tag}-br"

    @property
    def root_address(self) -> str:
        return self._address(ROOT_OCTET)

    def namespace(self, host: str) -> str:
        return f"{NAMESPACE_PREFIX}{self.tag}-{host}"

    def outer_link(self, host: str) -> str:
        return f"{LINK_PREFIX}{self.tag}-{self.octet(host)}"

    def address(self, host: str) -> str:
        return self._address(self.octet(host))

    def _address(self, octet: int) -> str:
        return f"{PREFIX}.{self.subnet}.{octet}"

    @staticmethod
    def octet(host: str) -> int:
        """The last octet of `host`'s address: `client`, `zookeeper`, or `<role>-<instance>`."""
        if host == CLIENT:
            return CLIENT_OCTET
        if host == "zookeeper":
            return _ROLE_BASE["zookeeper"]
        role, _, instance = host.rpartition("-")
        if role not in _ROLE_BASE or not instance.isdigit():
            raise LayoutError(f"{host!r} is not client, zookeeper or <role>-<instance> of {sorted(_ROLE_BASE)}")
        if not (1 <= int(instance) <= _ROLE_LIMIT[role]):
            raise LayoutError(f"{host!r}: the layout has room for {role}-1 to {role}-{_ROLE_LIMIT[role]}")
        return _ROLE_BASE[role] + int(instance)

    def owns(self, name: str) -> bool:
        """True when a namespace or link name is this cluster's."""
        return name.startswith(f"{NAMESPACE_PREFIX}{self.tag}-") or name.startswith(f"{LINK_PREFIX}{self.tag}-")


def tag_of(name: str) -> str | None:
    """The cluster tag in a namespace or link name made by this layout, None for any other name."""
    for prefix in (NAMESPACE_PREFIX, LINK_PREFIX):
        if name.startswith(prefix):
            tag, sep, _ = name[len(prefix):].partition("-")
            if sep and 1 <= len(tag) <= 6 and all(c in HEX_DIGITS for c in tag):
                return tag
    return None
