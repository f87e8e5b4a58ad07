"""What is left on this machine of a multi-host cluster's network, and which namespace a process runs in."""

from __future__ import annotations

import subprocess

from replog.devcluster.netns import REGISTRY


def _lines(*command: str) -> list[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.splitlines()


def leftovers(tag: str) -> list[str]:
    """Every namespace, link, root nftables table and record whose name carries the cluster tag `tag`."""
    found = [line.split()[0] for line in _lines("ip", "netns", "list") if f"-{tag}-" in line]
    found += [line.split(":")[1].strip() for line in _lines("ip", "-o", "link", "show") if f"rl-{tag}-" in line]
    found += [line for line in _lines("nft", "list", "tables") if f"replog_{tag}_" in line]
    found += [str(path) for path in REGISTRY.glob(f"{tag}.json")]
    return found


def namespace_of(pid: int) -> list[str]:
    """The names under /run/netns of process `pid`'s network namespace."""
    return _lines("ip", "netns", "identify", str(pid))[0].split() if _lines("ip", "netns", "identify", str(pid)) else []
