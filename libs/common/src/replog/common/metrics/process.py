"""What every replog process exports besides its own metrics (rows of table.py).

- its `_info` metric: which process it is, and which release it runs;
- its ZooKeeper session: connected or not, and how many sessions it lost (a lost session took
  its ephemeral znodes with it: a broker's registration, a controller's seat);
- its garbage collector's pauses (gc_pauses.py): how long each collection stopped every thread;
- its certificates' expiry: the notAfter of its own certificate and of the CA certificate it
  trusts, read from their files when Prometheus scrapes, so a certificate replaced on disk (and
  reloaded by the process, docs/security.md) shows at once.

Built by each service's bootstrap; nothing is registered at import time.
"""

from __future__ import annotations

import logging
import os
from importlib import metadata

from cryptography import x509
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.registry import Collector

from replog.common import gc_pauses
from replog.common.metrics import table
from replog.common.security.files import TlsFiles

log = logging.getLogger(__name__)


def release(distribution: str) -> str:
    """The installed version of `distribution` ("unknown" when it is not installed as one)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


class ProcessMetrics:
    def __init__(self, info: table.Metric, facts: dict[str, str], registry: CollectorRegistry = REGISTRY) -> None:
        assert set(facts) == set(info.labels), (facts, info.labels)
        info.create(registry).info(facts)
        self._connected = table.ZOOKEEPER_CONNECTED.create(registry)
        self._expirations = table.ZOOKEEPER_SESSION_EXPIRATIONS.create(registry)
        registry.register(gc_pauses.PauseCollector(gc_pauses.recorder()))
        self._registry = registry

    def on_zookeeper_session(self, state: str) -> None:
        """A ZooKeeper session listener (zk/client.py): "connected", "suspended" or "lost"."""
        self._connected.set(1 if state == "connected" else 0)
        if state == "lost":
            self._expirations.inc()

    def watch_certificates(self, tls: TlsFiles | None) -> None:
        """Export the expiry of the process's certificate and CA (nothing for a process without TLS)."""
        if tls is not None:
            self._registry.register(_CertificateExpiry(tls))


class _CertificateExpiry(Collector):
    def __init__(self, tls: TlsFiles) -> None:
        self._files = (("process", tls.cert_file), ("ca", tls.ca_file))
        self._seen: dict[str, tuple[tuple, float | None]] = {}  # path -> (file stamp, expiry)

    def collect(self):
        family = table.TLS_CERTIFICATE_EXPIRY.family()
        for label, path in self._files:
            expiry = self._expiry(path)
            if expiry is not None:
                family.add_metric([label], expiry)
        yield family

    def _expiry(self, path: str) -> float | None:
        """The earliest notAfter among the certificates in `path` (a CA file may hold several); None if unreadable."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        seen = self._seen.get(path)
        if seen is not None and seen[0] == stamp:
            return seen[1]
        try:
            with open(path, "rb") as handle:
                certificates = x509.load_pem_x509_certificates(handle.read())
            expiry = min(c.not_valid_after_utc.timestamp() for c in certificates)
        except (OSError, ValueError) as exc:
            log.warning("cannot read the certificate file %s for its expiry: %s", path, exc)
            expiry = None
        self._seen[path] = (stamp, expiry)
        return expiry
