"""Running Debian's ZooKeeper package as a plain java process (no service scripts).

With TLS (`ServerTls`), a server serves clients on its TLS port only (`secureClientPort`, through
Netty's connection factory): no plaintext client port is open. Each client must present a certificate
the cluster's CA signed (`ssl.clientAuth=need`); ZooKeeper's own certificate names no replog identity,
so it cannot call replog's services. The servers of an ensemble speak TLS to each other too
(`sslQuorum`), with the same certificate. The four-letter words (`srvr`, `ruok`, ...) go over TLS then.
"""

from __future__ import annotations

import shutil
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

from replog.common.security.files import TlsFiles

ZK_JAR = Path("/usr/share/java/zookeeper.jar")
ZK_CONF_DIR = Path("/etc/zookeeper/conf")
SLF4J_SIMPLE = Path("/usr/share/java/slf4j-simple.jar")
# Netty's TLS handler needs these, which the jar's manifest leaves out of its class path (Debian's 3.8.0):
# without them a TLS port accepts connections and drops each at once (ClassNotFoundException).
NETTY_EXTRA_JARS = (Path("/usr/share/java/netty-codec.jar"), Path("/usr/share/java/netty-resolver.jar"))
NETTY_FACTORY = "org.apache.zookeeper.server.NettyServerCnxnFactory"
# Four-letter words a server answers (tests find the leader with srvr, a client's server with cons).
FOUR_LETTER_WORDS = ("ruok", "stat", "mntr", "srvr", "cons")


class ZooKeeperMissing(RuntimeError):
    pass


DEFAULT_HEAP_MB = 512


def zookeeper_command(config_path: Path, jvm_args: list[str] | tuple[str, ...] = (),
                      heap_mb: int = DEFAULT_HEAP_MB) -> list[str]:
    """The java command line of a server (standalone or an ensemble member); `jvm_args` go before the main
    class (e.g. the super user's digest). `heap_mb` bounds the server's heap: ZooKeeper keeps every znode
    in it, so a cluster of a million partitions needs several times the default."""
    java = shutil.which("java")
    if java is None or not ZK_JAR.exists():
        raise ZooKeeperMissing(
            "ZooKeeper needs java and Debian's zookeeper package "
            f"({ZK_JAR}); run `make setup` (it installs them with apt-get)"
        )
    classpath = f"{ZK_CONF_DIR}:{ZK_JAR}"
    if SLF4J_SIMPLE.exists():  # otherwise ZooKeeper logs nothing at all (slf4j's no-op binding)
        classpath += f":{SLF4J_SIMPLE}"
    classpath += "".join(f":{jar}" for jar in NETTY_EXTRA_JARS if jar.exists())
    return [
        # C1 only (no C2): a young server recompiles its request processors with C2 in the middle
        # of the first bulk failover, on the cores the brokers need. A long-running production
        # server compiled those paths long ago; C1 code is the closer stand-in for it here
        # (docs/perf/zookeeper-c1-only.md).
        java, "-XX:TieredStopAtLevel=1", "-Xms64m", f"-Xmx{heap_mb}m", "-Djute.maxbuffer=4194304",
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


@dataclass(frozen=True)
class ServerTls:
    """A server's TLS files: its key and certificate in one PEM file (ZooKeeper's PEM key store), and the CA
    certificate clients' and peers' certificates must be signed by."""

    keystore_file: str
    ca_file: str


def write_config(directory: Path, port: int, tick_ms: int = 500, host: str = "127.0.0.1",
                 force_sync: bool = False, tls: ServerTls | None = None) -> Path:
    """A standalone server config; sessions may last 2..20 ticks (1 s to 10 s)."""
    return write_server_config(directory, 1, [ServerAddress(1, host, port)], tick_ms, force_sync, tls)


def write_server_config(directory: Path, my_id: int, servers: list[ServerAddress], tick_ms: int = 500,
                        force_sync: bool = False, tls: ServerTls | None = None,
                        session_timeout_ms: int = 0) -> Path:
    """The config (and myid file) of server `my_id` of `servers`; one server alone runs standalone.

    With more than one, each `server.N` line names the peer's quorum and election ports, and a
    follower has 10 ticks to join the leader and 5 to answer it (initLimit, syncLimit).
    A server grants sessions of at most 20 ticks unless told more; `session_timeout_ms` above that raises
    the bound, so that the clients get the timeout they ask for.
    `force_sync` False (a development cluster's default, for speed): the transaction log is not
    fsynced, so a power loss of the machine may take committed metadata with it. With `tls`, the client
    port is a TLS one and the only one (module docstring)."""
    me = next(s for s in servers if s.server_id == my_id)
    data = directory / "data"
    data.mkdir(parents=True, exist_ok=True)
    path = directory / "zoo.cfg"
    port_key = "clientPort" if tls is None else "secureClientPort"
    lines = [
        f"tickTime={tick_ms}",
        f"dataDir={data}",
        f"{port_key}={me.client_port}",
        f"{port_key}Address={me.host}",
        *([] if tls is None else _tls_lines(tls, quorum=len(servers) > 1)),
        "maxClientCnxns=0",
        "admin.enableServer=false",
        f"4lw.commands.whitelist={','.join(FOUR_LETTER_WORDS)}",
        "autopurge.purgeInterval=1",
        *([f"maxSessionTimeout={session_timeout_ms}"] if session_timeout_ms > 20 * tick_ms else []),
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


def _tls_lines(tls: ServerTls, quorum: bool) -> list[str]:
    stores = [f"keyStore.location={tls.keystore_file}", "keyStore.type=PEM",
              f"trustStore.location={tls.ca_file}", "trustStore.type=PEM"]
    lines = [f"serverCnxnFactory={NETTY_FACTORY}", *(f"ssl.{line}" for line in stores), "ssl.clientAuth=need",
             # A client is known by its certificate, not by the address it calls from (as at replog's own
             # servers): the operator's certificate, say, names no host.
             "ssl.hostnameVerification=false"]
    if quorum:  # each peer checks the other's certificate against the address in its server.N line
        lines += ["sslQuorum=true", *(f"ssl.quorum.{line}" for line in stores)]
    return lines


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 1.0,
                     tls: TlsFiles | None = None) -> str | None:
    """The server's answer to `word` (ruok, srvr, stat, cons, mntr), None when it does not answer; over TLS
    with `tls` (a server with a TLS client port has no other)."""
    assert word in FOUR_LETTER_WORDS, word
    try:
        with _open(host, port, timeout_s, tls) as sock:
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


def _open(host: str, port: int, timeout_s: float, tls: TlsFiles | None) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=timeout_s)
    if tls is None:
        return sock
    context = ssl.create_default_context(cafile=tls.ca_file)
    context.load_cert_chain(tls.cert_file, tls.key_file)
    try:
        return context.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def mode(host: str, port: int, tls: TlsFiles | None = None) -> str | None:
    """"leader", "follower" or "standalone" for a server that serves clients, else None (not running, or an
    ensemble member without a quorum)."""
    answer = four_letter_word(host, port, "srvr", tls=tls) or ""
    for line in answer.splitlines():
        if line.startswith("Mode: "):
            return line[len("Mode: "):].strip()
    return None


def is_ok(port: int, timeout_s: float = 0.5, host: str = "127.0.0.1", tls: TlsFiles | None = None) -> bool:
    """True when the server on `port` answers 'imok' to 'ruok'."""
    return four_letter_word(host, port, "ruok", timeout_s, tls) == "imok"
