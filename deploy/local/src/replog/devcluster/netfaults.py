"""Network faults between the hosts of a multi-host cluster (`ClusterSpec.hosts`), each a context manager
that restores the network when it ends, also when its body raises.

- `isolate(host)`: nothing the host sends reaches anyone, nothing sent to it arrives (ARP included, so its
  peers and it soon see "no route to host", as behind a dead switch port). A `netdev` table in the root
  namespace drops every frame on the host's bridge port, both ways.
- `cut(host, others, one_way=False)`: the host's packets to each of `others` vanish, and theirs to it unless
  `one_way`. Drops are made on input, in the receiving host's namespace: a packet dropped on output would
  fail the sender's send at once (EPERM), while one dropped on input just vanishes -- no reset, no error,
  the sender retransmits into the void -- which is what a cut network does.
- `delay(source, target, port, ...)` (delay_proxy.py): the source's connections to target:port pass a proxy
  that delays them.

Tables are named `replog_fault_<n>` inside namespaces (they go with the namespace) and `replog_<tag>_fault_<n>`
in the root namespace (HostNetwork.destroy removes those of its tag, so a killed run leaves none behind).
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Iterable, Iterator

from replog.devcluster.netns import HostNetwork, in_namespace, nft_apply, root_table_prefix, run

_numbers = itertools.count(1)


@contextlib.contextmanager
def _table(namespace: str | None, family: str, name: str, body: str) -> Iterator[None]:
    """An nftables table (in `namespace`, or the root namespace for None) for as long as the `with` lasts."""
    nft_apply(namespace, f"table {family} {name} {{\n{body}\n}}\n")
    try:
        yield
    finally:
        if namespace is None:
            run("nft", "delete", "table", family, name, check=False)
        else:
            in_namespace(namespace, "nft", "delete", "table", family, name, check=False)


class NetworkFaults:
    def __init__(self, network: HostNetwork) -> None:
        self.network = network

    def _check(self, *hosts: str) -> None:
        for host in hosts:
            if host not in self.network.hosts:
                raise ValueError(f"{host!r} is not a host of this cluster: one of {', '.join(self.network.hosts)}")

    @contextlib.contextmanager
    def isolate(self, host: str) -> Iterator[None]:
        """Cut `host` off from every other host and from the root namespace, both ways."""
        self._check(host)
        port = self.network.layout.outer_link(host)
        name = f"{root_table_prefix(self.network.layout.tag)}fault_{next(_numbers)}"
        body = "\n".join(f'  chain {hook} {{ type filter hook {hook} device "{port}" priority -100; policy drop; }}'
                         for hook in ("ingress", "egress"))
        with _table(None, "netdev", name, body):
            yield

    @contextlib.contextmanager
    def cut(self, host: str, others: Iterable[str], *, one_way: bool = False) -> Iterator[None]:
        """`host`'s packets to each of `others` are lost; theirs to `host` too, unless `one_way`."""
        others = list(others)
        self._check(host, *others)
        if host in others or not others:
            raise ValueError(f"cut {host} from whom? {others!r} must name other hosts")
        address = self.network.address(host)
        number = next(_numbers)
        with contextlib.ExitStack() as stack:
            for other in others:
                stack.enter_context(self._drop_from(other, [address], number))
            if not one_way:
                stack.enter_context(self._drop_from(host, [self.network.address(o) for o in others], number))
            yield

    def _drop_from(self, receiver: str, senders: list[str], number: int):
        """A table in `receiver`'s namespace dropping what arrives from `senders`."""
        body = (f"  chain input {{ type filter hook input priority -100; policy accept; "
                f"ip saddr {{ {', '.join(senders)} }} drop; }}")
        return _table(self.network.namespace(receiver), "inet", f"replog_fault_{number}", body)
