"""The address configuration keys (their one owner): where a service listens, and what it tells others.

Every service inherits `ListenSettings` (`host`, the address its gRPC and metrics servers bind).
Services that publish their address — a broker's registration, the controller's seat, the endpoints
in metadata — inherit `AdvertiseSettings`, which adds `advertised_host`: empty means "advertise
`host`". A wildcard `host` (0.0.0.0 or ::) binds every interface but names none a peer could dial,
so such a config must say what to advertise, or the process refuses to start.

The advertised host is also the name peers check this process's certificate against (TLS host-name
verification), so with TLS it must be one of the certificate's SAN IP addresses or DNS names.
"""

from __future__ import annotations

from dataclasses import dataclass

from replog.common.config import ConfigError, flag_name, setting

WILDCARD_HOSTS = ("0.0.0.0", "::", "[::]")


def _plain_host(value: str) -> str | None:
    if not value or any(c.isspace() for c in value) or "/" in value:
        return "must be a host name or IP address"
    return None


def _advertisable_host(value: str) -> str | None:
    if not value:
        return None
    if value in WILDCARD_HOSTS:
        return "is a wildcard address no peer can dial: give the host name or IP address peers reach this process at"
    if ":" in value:
        # Peers join the published host and port as host:port, which an IPv6 literal would make ambiguous.
        return "is an IPv6 address, which cannot be advertised yet: give a host name that resolves to it"
    return _plain_host(value)


_plain_host.rule = "a host name or IP address; 0.0.0.0 or :: listens on every interface"  # type: ignore[attr-defined]
_advertisable_host.rule = "empty, or a host name or IPv4 address that is not a wildcard"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ListenSettings:
    host: str = setting("127.0.0.1", "address to listen on (0.0.0.0 or :: for every interface)", _plain_host)


@dataclass(frozen=True)
class AdvertiseSettings(ListenSettings):
    advertised_host: str = setting(
        "", "address peers and clients are told to reach this process at (registration in ZooKeeper, endpoints "
            "in metadata; with TLS, a SAN of its certificate); empty: the listen address `host`",
        _advertisable_host)

    def __post_init__(self) -> None:
        if not self.advertised_host and self.host in WILDCARD_HOSTS:
            raise ConfigError(
                f"{flag_name('host')} {self.host} listens on every interface, which names no address peers could "
                f"dial: pass {flag_name('advertised_host')} with the host name or IP address they reach this "
                f"process at (e.g. --advertised-host 10.0.0.5)")

    @property
    def published_host(self) -> str:
        """The host this process publishes (registration, metadata endpoints) and is dialed at."""
        return self.advertised_host or self.host
