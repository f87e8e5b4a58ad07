"""Running Debian's ZooKeeper package as a plain java process (no service scripts)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

ZK_JAR = Path("/usr/share/java/zookeeper.jar")
ZK_CONF_DIR = Path("/etc/zookeeper/conf")
SLF4J_SIMPLE = Path("/usr/share/java/slf4j-simple.jar")


class ZooKeeperMissing(RuntimeError):
    pass


def zookeeper_command(config_path: Path, jvm_args: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The java command line of a standalone server; `jvm_args` go before the main class (e.g. the
    super user's digest)."""
    java = shutil.which("java")
    if java is None or not ZK_JAR.exists():
        raise ZooKeeperMissing(
            "ZooKeeper needs java and Debian's zookeeper package "
            f"({ZK_JAR}); run `make setup` (it installs them with apt-get)"
        )
    classpath = f"{ZK_CONF_DIR}:{ZK_JAR}"
    if SLF4J_SIMPLE.exists():  # otherwise ZooKeeper logs nothing at all (slf4j's no-op binding)
        classpath += f":{SLF4J_SIMPLE}"
    return [
        # C1 only (no C2): a young server recompiles its request processors with C2 in the middle
        # of the first bulk failover, on the cores the brokers need. A long-running production
        # server compiled those paths long ago; C1 code is the closer stand-in for it here
        # (docs/perf/zookeeper-c1-only.md).
        java, "-XX:TieredStopAtLevel=1", "-Xms64m", "-Xmx512m", "-Djute.maxbuffer=4194304",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dzookeeper.admin.enableServer=false", *jvm_args,
        "-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(config_path),
    ]


def write_config(directory: Path, port: int, tick_ms: int = 500, force_sync: bool = False) -> Path:
    """A standalone server config; sessions may last 2..20 ticks (1 s to 10 s).

    `force_sync` False (a development cluster's default, for speed): the transaction log is not
    fsynced, so a power loss of the machine may take committed metadata with it."""
    data = directory / "data"
    data.mkdir(parents=True, exist_ok=True)
    path = directory / "zoo.cfg"
    path.write_text(
        f"tickTime={tick_ms}\n"
        f"dataDir={data}\n"
        f"clientPort={port}\n"
        "clientPortAddress=127.0.0.1\n"
        "maxClientCnxns=0\n"
        "admin.enableServer=false\n"
        "4lw.commands.whitelist=ruok,stat,mntr,srvr\n"
        "autopurge.purgeInterval=1\n"
        f"forceSync={'yes' if force_sync else 'no'}\n"
        # With the log fsynced, a power loss can still take a snapshot that had not reached the disk (the
        # first, empty one in particular); the server then refuses to start although its log holds every
        # change since zxid 0, unless told to trust the log alone.
        + ("snapshot.trust.empty=true\n" if force_sync else "")
    )
    return path


def is_ok(port: int, timeout_s: float = 0.5) -> bool:
    """True when the server on `port` answers 'imok' to 'ruok'."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            sock.sendall(b"ruok")
            return sock.recv(16) == b"imok"
    except OSError:
        return False
