"""Running Debian's ZooKeeper package as a plain java process (no service scripts)."""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

ZK_JAR = Path("/usr/share/java/zookeeper.jar")
ZK_CONF_DIR = Path("/etc/zookeeper/conf")
SLF4J_SIMPLE = Path("/usr/share/java/slf4j-simple.jar")
# Four-letter words a server answers (tests find the leader with srvr, a client's server with cons).
FOUR_LETTER_WORDS = ("ruok", "stat", "mntr", "srvr", "cons")


class ZooKeeperMissing(RuntimeError):
    pass


def zookeeper_command(config_path: Path, jvm_args: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The java command line of a server (standalone or an ensemble member); `jvm_args` go before the main
    class (e.g. the super user's digest)."""
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


# An ensemble's servers talk to each other on these ports when each has a host (a namespace) of its own.
QUORUM_PORT = 2888
ELECTION_PORT = 3888


@dataclass(frozen=True)
class ServerAddress:
    """Where one server of an ensemble listens: clients on `client_port`, its peers on the other two."""

    server_id: int
    host: str
    client_port: int
    quorum_port: int = 0
    election_port: int = 0

    @property
    def client_address(self) -> str:
        return f"{self.host}:{self.client_port}"


def write_config(directory: Path, port: int, tick_ms: int = 500, host: str = "127.0.0.1",
                 force_sync: bool = False) -> Path:
    """A standalone server config; sessions may last 2..20 ticks (1 s to 10 s)."""
    return write_server_config(directory, 1, [ServerAddress(1, host, port)], tick_ms, force_sync)


def write_server_config(directory: Path, my_id: int, servers: list[ServerAddress], tick_ms: int = 500,
                        force_sync: bool = False) -> Path:
    """The config (and myid file) of server `my_id` of `servers`; one server alone runs standalone.

    With more than one, each `server.N` line names the peer's quorum and election ports, and a
    follower has 10 ticks to join the leader and 5 to answer it (initLimit, syncLimit).
    `force_sync` False (a development cluster's default, for speed): the transaction log is not
    fsynced, so a power loss of the machine may take committed metadata with it."""
    me = next(s for s in servers if s.server_id == my_id)
    data = directory / "data"
    data.mkdir(parents=True, exist_ok=True)
    path = directory / "zoo.cfg"
    lines = [
        f"tickTime={tick_ms}",
        f"dataDir={data}",
        f"clientPort={me.client_port}",
        f"clientPortAddress={me.host}",
        "maxClientCnxns=0",
        "admin.enableServer=false",
        f"4lw.commands.whitelist={','.join(FOUR_LETTER_WORDS)}",
        "autopurge.purgeInterval=1",
        f"forceSync={'yes' if force_sync else 'no'}",
    ]
    if force_sync:
        # With the log fsynced, a power loss can still take a snapshot that had not reached the disk (the
        # first, empty one in particular); the server then refuses to start although its log holds every
        # change since zxid 0, unless told to trust the log alone.
        lines.append("snapshot.trust.empty=true")
    if len(servers) > 1:
        (data / "myid").write_text(f"{my_id}\n")
        lines += ["initLimit=10", "syncLimit=5"]
        lines += [f"server.{s.server_id}={s.host}:{s.quorum_port}:{s.election_port}" for s in servers]
    path.write_text("\n".join(lines) + "\n")
    return path


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 1.0) -> str | None:
    """The server's answer to `word` (ruok, srvr, stat, cons, mntr), None when it does not answer."""
    assert word in FOUR_LETTER_WORDS, word
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(word.encode())
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode(errors="replace")


def mode(host: str, port: int) -> str | None:
    """"leader", "follower" or "standalone" for a server that serves clients, else None (not running, or an
    ensemble member without a quorum)."""
    answer = four_letter_word(host, port, "srvr") or ""
    for line in answer.splitlines():
        if line.startswith("Mode: "):
            return line[len("Mode: "):].strip()
    return None


def is_ok(port: int, timeout_s: float = 0.5, host: str = "127.0.0.1") -> bool:
    """True when the server on `port` answers 'imok' to 'ruok'."""
    return four_letter_word(host, port, "ruok", timeout_s) == "imok"
