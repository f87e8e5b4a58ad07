"""Making and removing a cluster's hosts: Linux network namespaces on a bridge (names in `hosts.py`).

`HostNetwork.create` picks a free subnet and a fresh tag, records them, then adds the bridge (with the root
namespace's address, so tests and health checks in the root namespace reach every host), and for each host a
namespace with `lo` up and a veth pair to the bridge. `destroy` kills whatever still runs inside the
namespaces and deletes them (their veth pairs and nftables tables go with them), the bridge and the record.

Records live in REGISTRY (`/run/replog/hosts/<tag>.json`; /run is emptied at boot, as the namespaces are) and
in the cluster's state directory (`hosts.json`). A record is written before anything is made and removed
after everything is gone, so every namespace or link named `replog-<tag>-*` / `rl-<tag>-*` without a record
is a leftover. `sweep` removes leftovers, and networks whose owner is gone: the owner is either a process
(a test run: gone when that process has exited) or only the state directory (`replog-local up --hosts`:
gone when the state directory no longer records that network). `create` sweeps first, and `replog-local
down` sweeps too, so a killed run's network is removed by the next one.

Needs root, iproute2's `ip` and nftables' `nft`; without them `HostsUnavailable` says what is missing.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import ipaddress
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from replog.devcluster.hosts import CLIENT, INNER_LINK, LINK_PREFIX, HostLayout, tag_of

REGISTRY = Path("/run/replog/hosts")
STATE_FILE = "hosts.json"
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


class HostsUnavailable(RuntimeError):
    """This machine cannot make the multi-host layout (not root, or a tool is missing)."""


def require_tools() -> None:
    if os.geteuid() != 0:
        raise HostsUnavailable("the multi-host layout needs root (network namespaces, veth pairs, nftables)")
    for tool, package in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool) is None:
            raise HostsUnavailable(f"the multi-host layout needs `{tool}` (Debian's {package}; `make setup` "
                                   f"installs it)")


def run(*args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    """Run a command of iproute2 or nftables (`input` on its stdin); a failure raises with its message."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, input=input)
    if check and done.returncode != 0:
        raise HostsUnavailable(f"`{' '.join(args)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


def in_namespace(namespace: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run("ip", "netns", "exec", namespace, *args, check=check)


def nft_apply(namespace: str | None, script: str) -> None:
    """Load an nftables script in `namespace` (None: the root namespace)."""
    prefix = () if namespace is None else ("ip", "netns", "exec", namespace)
    run(*prefix, "nft", "-f", "-", input=script)


def make_in(namespace: str, make: Callable[[], T]) -> T:
    """Run `make()` in a thread that has entered `namespace` (setns): the sockets it makes belong to that
    namespace for good, whichever thread uses them later. The calling thread stays where it is."""
    found: dict = {}

    def enter_and_make() -> None:
        try:
            fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
            try:
                if _libc.setns(fd, _CLONE_NEWNET) != 0:
                    error = ctypes.get_errno()
                    raise OSError(error, f"setns into {namespace}: {os.strerror(error)}")
            finally:
                os.close(fd)
            found["value"] = make()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            found["error"] = exc

    thread = threading.Thread(target=enter_and_make, name=f"setns-{namespace}")
    thread.start()
    thread.join()
    if "error" in found:
        raise found["error"]
    return found["value"]


def _start_time(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (tells a live owner from a recycled PID)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


@contextlib.contextmanager
def _registry_lock() -> Iterator[None]:
    REGISTRY.mkdir(parents=True, exist_ok=True)
    with open(REGISTRY / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class HostNetwork:
    def __init__(self, layout: HostLayout, hosts: list[str], state_dir: Path, owner_pid: int = 0,
                 owner_start: int | None = None) -> None:
        self.layout = layout
        self.hosts = list(hosts)
        self.state_dir = Path(state_dir).resolve()
        self.owner_pid = owner_pid
        self.owner_start = owner_start

    # --- records ---------------------------------------------------------------------

    def _record(self) -> dict:
        return {"tag": self.layout.tag, "subnet": self.layout.subnet, "hosts": self.hosts,
                "state_dir": str(self.state_dir), "owner_pid": self.owner_pid, "owner_start": self.owner_start}

    @classmethod
    def _from_record(cls, record: dict) -> HostNetwork:
        return cls(HostLayout(record["tag"], record["subnet"]), record["hosts"], Path(record["state_dir"]),
                   record.get("owner_pid", 0), record.get("owner_start"))

    @classmethod
    def load(cls, state_dir: Path) -> HostNetwork | None:
        """The network a state directory records, None when it has none."""
        path = Path(state_dir) / STATE_FILE
        return cls._from_record(json.loads(path.read_text())) if path.exists() else None

    def _is_stale(self) -> bool:
        if self.owner_pid and _start_time(self.owner_pid) != self.owner_start:
            return True
        path = self.state_dir / STATE_FILE
        try:
            return json.loads(path.read_text())["tag"] != self.layout.tag
        except (OSError, ValueError, KeyError):
            return True

    # --- making and removing -----------------------------------------------------------

    @classmethod
    def create(cls, state_dir: Path, hosts: list[str], owner_pid: int = 0,
               layout: HostLayout | None = None) -> HostNetwork:
        """Make a namespace per host (plus `client`) on a new bridge; `owner_pid` (0: none) is the process
        whose exit makes the network a leftover. `layout` makes a removed network again under the names and
        addresses its cluster's processes were planned with; by default a new tag and a free subnet."""
        require_tools()
        sweep()
        with _registry_lock():
            if layout is None:
                tag = f"{random.getrandbits(20):05x}"
                while (REGISTRY / f"{tag}.json").exists():
                    tag = f"{random.getrandbits(20):05x}"
                layout = HostLayout(tag, _free_subnet())
            elif layout.subnet in _used_subnets() or (REGISTRY / f"{layout.tag}.json").exists():
                raise HostsUnavailable(f"subnet {layout.network} of this cluster is in use by another: remove "
                                       f"this cluster's state directory to plan it again")
            network = cls(layout, [CLIENT, *hosts], state_dir, owner_pid, _start_time(owner_pid) if owner_pid else None)
            record = json.dumps(network._record(), indent=2)
            (REGISTRY / f"{layout.tag}.json").write_text(record)
            network.state_dir.mkdir(parents=True, exist_ok=True)
            (network.state_dir / STATE_FILE).write_text(record)
        try:
            network._make()
        except BaseException:
            network.destroy()
            raise
        return network

    def _make(self) -> None:
        layout = self.layout
        prefix_length = layout.network.prefixlen
        run("ip", "link", "add", layout.bridge, "type", "bridge")
        run("ip", "addr", "add", f"{layout.root_address}/{prefix_length}", "dev", layout.bridge)
        run("ip", "link", "set", layout.bridge, "up")
        for host in self.hosts:
            namespace, outer = layout.namespace(host), layout.outer_link(host)
            run("ip", "netns", "add", namespace)
            run("ip", "-n", namespace, "link", "set", "lo", "up")
            run("ip", "link", "add", outer, "type", "veth", "peer", "name", INNER_LINK, "netns", namespace)
            run("ip", "link", "set", outer, "master", layout.bridge)
            run("ip", "link", "set", outer, "up")
            run("ip", "-n", namespace, "addr", "add", f"{layout.address(host)}/{prefix_length}", "dev", INNER_LINK)
            run("ip", "-n", namespace, "link", "set", INNER_LINK, "up")

    def destroy(self) -> None:
        """Kill what runs in the namespaces, delete them, the bridge and the records; safe to repeat."""
        layout = self.layout
        namespaces = [n for n in _namespaces() if layout.owns(n)]
        _kill_inside(namespaces)
        for namespace in namespaces:
            run("ip", "netns", "delete", namespace, check=False)
        for link in _links():
            if layout.owns(link):
                run("ip", "link", "delete", link, check=False)
        for family, table in _root_tables():
            if table.startswith(root_table_prefix(layout.tag)):
                run("nft", "delete", "table", family, table, check=False)
        (REGISTRY / f"{layout.tag}.json").unlink(missing_ok=True)
        path = self.state_dir / STATE_FILE
        with contextlib.suppress(OSError, ValueError, KeyError):
            if json.loads(path.read_text())["tag"] == layout.tag:
                path.unlink()

    # --- using ---------------------------------------------------------------------------

    def address(self, host: str) -> str:
        return self.layout.address(host)

    def namespace(self, host: str) -> str:
        return self.layout.namespace(host)

    def exec_prefix(self, host: str) -> list[str]:
        """What runs a command on `host`: `ip netns exec <namespace>`."""
        return ["ip", "netns", "exec", self.layout.namespace(host)]

    def exists(self) -> bool:
        return self.layout.bridge in _links()


def _namespaces() -> list[str]:
    done = run("ip", "netns", "list", check=False)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def _links() -> list[str]:
    done = run("ip", "-o", "link", "show", check=False)
    # "7: rl-abcde-br: <...>" or "8: rl-abcde-101@if2: <...>"
    return [line.split(":")[1].strip().split("@")[0] for line in done.stdout.splitlines() if ":" in line]


def _kill_inside(namespaces: list[str], timeout_s: float = 10.0) -> None:
    """SIGKILL every process still running in these namespaces (a leftover cluster's services) and wait."""
    pids = set()
    for namespace in namespaces:
        pids.update(int(p) for p in run("ip", "netns", "pids", namespace, check=False).stdout.split() if p.isdigit())
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while any(Path(f"/proc/{pid}").exists() and _start_time(pid) is not None and not _is_zombie(pid)
              for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def root_table_prefix(tag: str) -> str:
    """How the names of a cluster's nftables tables in the root namespace start (netfaults.py)."""
    return f"replog_{tag}_"


def _tag_of_table(table: str) -> str | None:
    tag, sep, _ = table.removeprefix("replog_").partition("_")
    return tag_of(f"{LINK_PREFIX}{tag}-") if table.startswith("replog_") and sep else None


def _root_tables() -> list[tuple[str, str]]:
    """(family, name) of every nftables table in the root namespace."""
    if shutil.which("nft") is None:
        return []
    done = run("nft", "list", "tables", check=False)
    return [(words[1], words[2]) for words in (line.split() for line in done.stdout.splitlines())
            if len(words) == 3 and words[0] == "table"]


def _used_subnets() -> set[int]:
    """Subnet numbers of 10.211.x.0/24 this machine already has an address or a route in, or a record names."""
    used = set()
    for args in (("ip", "-4", "-o", "addr", "show"), ("ip", "-4", "route", "show", "table", "all")):
        for word in run(*args, check=False).stdout.split():
            with contextlib.suppress(ValueError):
                network = ipaddress.IPv4Network(word, strict=False)
                for subnet in range(1, 255):
                    if network.overlaps(ipaddress.IPv4Network(f"10.211.{subnet}.0/24")):
                        used.add(subnet)
    for path in REGISTRY.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            used.add(json.loads(path.read_text())["subnet"])
    return used


def _free_subnet() -> int:
    free = sorted(set(range(1, 255)) - _used_subnets())
    if not free:
        raise HostsUnavailable("no free subnet in 10.211.0.0/16 for the multi-host layout")
    return random.choice(free)


def sweep() -> list[str]:
    """Remove every network whose owner is gone, and every namespace or link of ours no record names.
    Returns the tags removed."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return []
    removed = []
    with _registry_lock():
        recorded = set()
        for path in sorted(REGISTRY.glob("*.json")):
            try:
                network = HostNetwork._from_record(json.loads(path.read_text()))
            except (OSError, ValueError, KeyError):
                path.unlink(missing_ok=True)
                continue
            if network._is_stale():
                network.destroy()
                removed.append(network.layout.tag)
            else:
                recorded.add(network.layout.tag)
        tags = {tag_of(name) for name in [*_namespaces(), *_links()]}
        tags |= {_tag_of_table(table) for _, table in _root_tables()}
        orphans = tags - recorded - {None}
        for tag in sorted(orphans):
            HostNetwork(HostLayout(tag, 1), [], REGISTRY / "none").destroy()  # a name holds no subnet: any will do
            removed.append(tag)
    return removed
