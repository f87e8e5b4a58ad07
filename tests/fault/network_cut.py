"""A network cut for fault tests: some processes' connections to one port fall into a black hole.

Every process of a local cluster listens and connects on 127.0.0.1, so an address or a
port alone does not tell a follower's connection to its leader from the controller's or
the test's own. What does is the process that opened the socket. `process_group` moves
the processes into a cgroup (v2) of their own; `black_hole` adds an nftables table
that, on output, notes the source port of every packet a socket of that cgroup sends to
the port, and on input drops the packets of those connections both ways. The drop is on
input, after the packet has left: one dropped on output fails the sender's send at once
(EPERM), while one dropped on input just vanishes -- no reset, no error, the sender
retransmits into the void -- which is what a cut network does.

A socket belongs to the cgroup its process was in when the socket was made, so the
processes must be moved before they open the connections to cut.

Each `with` removes what it made when it ends, also on failure: the table (which heals
the cut), and the cgroup after its processes are moved back where they were. The names
start with `replog_test_`, so anything a killed test run left is easy to find
(`nft list tables`, the cgroup2 mount). Needs root, the `nft` tool (`make test` installs
Debian's nftables) and a cgroup2 mount under /sys/fs/cgroup; without them the test fails
saying which is missing, rather than pass without having cut anything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

NFT_CGROUP_ROOT = Path("/sys/fs/cgroup")  # nft resolves a `socket cgroupv2` path relative to it


@dataclass(frozen=True)
class ProcessGroup:
    path: Path   # the cgroup's directory
    level: int   # its depth in the cgroup2 hierarchy, as `socket cgroupv2 level` counts


def _cgroup2_mount() -> tuple[Path, str]:
    """The cgroup2 mount point and the hierarchy path mounted there (from /proc/self/mountinfo)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        separator = fields.index("-")
        if fields[separator + 1] == "cgroup2":
            return Path(fields[4]), fields[3]
    pytest.fail("no cgroup2 mount: cannot tell one process's connections from another's")


def _require_tools() -> None:
    if os.geteuid() != 0:
        pytest.fail("a network cut needs root (nftables, cgroups): run the fault tests as root")
    if shutil.which("nft") is None:
        pytest.fail("a network cut needs the nft tool (Debian: apt-get install nftables; make test installs it)")


def _cgroup2_path_of(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    raise AssertionError(f"process {pid} is in no cgroup2 group")


@contextlib.contextmanager
def process_group(pids: list[int]) -> Iterator[ProcessGroup]:
    """These processes (all their threads) in a cgroup of their own while the `with` lasts."""
    _require_tools()
    mount, mounted_root = _cgroup2_mount()
    if not mount.is_relative_to(NFT_CGROUP_ROOT):
        pytest.fail(f"cgroup2 is mounted at {mount}, where nft does not look")
    path = mount / f"replog_test_{uuid.uuid4().hex[:12]}"
    origins = {pid: _cgroup2_path_of(pid) for pid in pids}
    path.mkdir()
    try:
        for pid in pids:
            (path / "cgroup.procs").write_text(str(pid))
        yield ProcessGroup(path, level=len(Path(mounted_root).parts))
    finally:
        for pid, origin in origins.items():
            with contextlib.suppress(ProcessLookupError):  # it exited: it left the group by itself
                (mount / origin.lstrip("/") / "cgroup.procs").write_text(str(pid))
        path.rmdir()


@contextlib.contextmanager
def black_hole(group: ProcessGroup, port: int) -> Iterator[None]:
    """Drop every packet, both ways, of the connections the group's processes make to 127.0.0.1:`port`."""
    table = group.path.name
    cgroup = group.path.relative_to(NFT_CGROUP_ROOT)
    script = f"""
        table inet {table} {{
            set cut_ports {{ type inet_service; flags dynamic; }}
            chain output {{
                type filter hook output priority filter; policy accept;
                ip daddr 127.0.0.1 tcp dport {port} socket cgroupv2 level {group.level} "{cgroup}" \\
                    add @cut_ports {{ tcp sport }}
            }}
            chain input {{
                type filter hook input priority filter; policy accept;
                ip daddr 127.0.0.1 tcp dport {port} tcp sport @cut_ports drop
                ip saddr 127.0.0.1 tcp sport {port} tcp dport @cut_ports drop
            }}
        }}
    """
    subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["nft", "delete", "table", "inet", table], check=True, capture_output=True)
