"""Reaching ZooKeeper over TLS: the config keys (their one owner), the files a process uses, and the
client context every ZooKeeper connection of a process is opened with.

ZooKeeper (3.5.7 and later) serves clients over TLS on its `secureClientPort` and asks each for a
certificate its trust store's CA signed (`ssl.clientAuth=need`); without one the handshake fails and
nothing reaches the server, digest credentials included. A replog process with `zookeeper_tls` on
opens every connection there with TLS: kazoo's (client.py) and the wire-level sessions' (session.py,
for bulk reads, the pipelined writer and the change feed). It checks the server's certificate against
the CA and the host name or address of the connect string, and presents its own certificate. The files
are `zookeeper_tls_ca_file` / `_cert_file` / `_key_file`, or, where those are empty, the process's own
`tls_ca_file` / `tls_cert_file` / `tls_key_file`: a local cluster's ZooKeeper trusts the cluster's CA,
so each process shows ZooKeeper the certificate it shows its peers.

TLS protects the connection (no one on the network reads digest passwords or metadata, or speaks to
ZooKeeper without a certificate of the CA); what a session may do with znodes is still decided by
its digest identity and the znode ACLs (auth.py).
"""

from __future__ import annotations

import functools
import socket
import ssl
from dataclasses import dataclass

from replog.common.config import ConfigError, flag_name, setting
from replog.common.security.files import TlsFiles, TlsFilesError

ZK_TLS_KEYS = ("zookeeper_tls_ca_file", "zookeeper_tls_cert_file", "zookeeper_tls_key_file")
_OWN_TLS_KEYS = ("tls_ca_file", "tls_cert_file", "tls_key_file")


@dataclass(frozen=True)
class ZkTlsSettings:
    zookeeper_tls: bool = setting(False, "reach ZooKeeper over TLS (its secureClientPort; the connect string names "
                                         "that port), checking its certificate and presenting this process's "
                                         "(zookeeper_tls_*_file, or tls_*_file where those are empty)")
    zookeeper_tls_ca_file: str = setting("", "PEM file of the CA that signed ZooKeeper's certificate (empty: "
                                             "tls_ca_file)")
    zookeeper_tls_cert_file: str = setting("", "PEM file of the certificate this process shows ZooKeeper (empty: "
                                               "tls_cert_file)")
    zookeeper_tls_key_file: str = setting("", "PEM file of that certificate's private key (empty: tls_key_file)")


def zookeeper_tls_files(config) -> TlsFiles | None:
    """The files a process with `config` (ZkTlsSettings and the service's TlsSettings) reaches ZooKeeper with;
    None when `zookeeper_tls` is off. Raises ConfigError naming what is missing or unusable."""
    if not config.zookeeper_tls:
        return None
    paths = [getattr(config, zk_key) or getattr(config, own_key, "")
             for zk_key, own_key in zip(ZK_TLS_KEYS, _OWN_TLS_KEYS)]
    missing = [f"{flag_name(zk_key)} (or {flag_name(own_key)})"
               for path, zk_key, own_key in zip(paths, ZK_TLS_KEYS, _OWN_TLS_KEYS) if not path]
    if missing:
        raise ConfigError(f"zookeeper_tls is on but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                          "not set")
    files = TlsFiles(*paths)
    try:
        files.read()  # readable, and the key is the certificate's
    except TlsFilesError as exc:
        raise ConfigError(f"zookeeper_tls: {exc}") from None
    return files


def client_context(files: TlsFiles) -> ssl.SSLContext:
    """A client context that trusts `files.ca_file` alone, checks host names, and presents the certificate.
    Made once per version of the files (a rotated certificate gives a new context on the next connection)."""
    return _context(files, files.stamp())


@functools.lru_cache(maxsize=8)
def _context(files: TlsFiles, _stamp: tuple) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the peer and its host name by default
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # The wire-level clients read on one thread while another writes (session.py); in TLS 1.2 a read that
    # succeeds writes nothing, so the two never use the same half of the connection at once.
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    # Forward secrecy with elliptic-curve key exchange, the cheapest the JVM and OpenSSL share.
    context.set_ciphers("ECDHE+AESGCM:ECDHE+CHACHA20")
    context.load_verify_locations(cafile=files.ca_file)
    context.load_cert_chain(files.cert_file, files.key_file)
    return context


def wrap(sock: socket.socket, files: TlsFiles, host: str) -> ssl.SSLSocket:
    """`sock`, connected to ZooKeeper at `host`, after a TLS handshake (within the socket's timeout)."""
    return client_context(files).wrap_socket(sock, server_hostname=host)


def kazoo_args(files: TlsFiles | None) -> dict:
    """KazooClient's TLS arguments for `files` (none for plaintext): a handler that opens kazoo's connections
    with `client_context`. kazoo's own TLS would build a context on every connection attempt, loading the
    system's CAs each time (some 30 ms) and trusting them besides the named one; this one trusts the named
    CA alone. `use_ssl` only makes kazoo's connection log say so."""
    if files is None:
        return {}
    return {"handler": _tls_handler_class()(files), "use_ssl": True}


@functools.cache
def _tls_handler_class():
    """kazoo's threading handler whose connections are TLS ones made with `client_context` (kazoo is imported
    here, when a client needs it: the wire-level sessions use this module without it)."""
    from kazoo.handlers.threading import SequentialThreadingHandler
    from kazoo.handlers.utils import create_tcp_connection

    class TlsHandler(SequentialThreadingHandler):
        def __init__(self, files: TlsFiles) -> None:
            super().__init__()
            self._files = files

        def create_connection(self, address, hostname=None, timeout=None, **_kazoo_tls_args):
            sock = create_tcp_connection(socket, address, timeout=timeout)  # with kazoo's socket options
            return wrap(sock, self._files, hostname or address[0])

    return TlsHandler
