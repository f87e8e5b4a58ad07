"""Who is calling: the identity a verified peer certificate names.

Every replog certificate carries one SAN URI `replog://<kind>/<name>`: `replog://controller/1`,
`replog://broker/2`, `replog://gateway/1`, `replog://user/alice`. The TLS handshake has already
checked the certificate against the cluster's CA (and its dates) before any call reaches a handler,
so reading the URI back is all `peer_principal` does: gRPC hands the SAN entries over as the peer's
identities, no certificate parsing needed. Parsed identities are cached, so a call costs one
dictionary look-up.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEME = "replog://"
SERVICE_KINDS = ("controller", "broker", "gateway")
KINDS = (*SERVICE_KINDS, "user")
# The key under which gRPC lists the SAN entries of a verified peer certificate.
SAN_IDENTITY_KEY = "x509_subject_alternative_name"


@dataclass(frozen=True)
class Principal:
    """A service (`kind` controller, broker or gateway; `name` its id, "2") or a user (`name` the user name)."""

    kind: str
    name: str

    def __post_init__(self) -> None:
        assert self.kind in KINDS, f"unknown principal kind {self.kind!r}"

    def __str__(self) -> str:
        return f"User:{self.name}" if self.kind == "user" else f"{self.kind}:{self.name}"

    @property
    def uri(self) -> str:
        """The SAN URI a certificate of this principal carries."""
        return f"{SCHEME}{self.kind}/{self.name}"

    @property
    def service_id(self) -> int | None:
        """The numeric id of a controller or broker (None for a user, a gateway or a non-numeric name)."""
        if self.kind in ("controller", "broker") and self.name.isdigit():
            return int(self.name)
        return None


def parse_uri(uri: str) -> Principal | None:
    """The principal a `replog://kind/name` URI names; None for any other text."""
    if not uri.startswith(SCHEME):
        return None
    kind, slash, name = uri[len(SCHEME):].partition("/")
    if not slash or kind not in KINDS or not name or "/" in name:
        return None
    return Principal(kind, name)


def principal_of_identities(identities) -> Principal | None:
    """The one principal among a certificate's SAN entries (bytes or text); None if none or several."""
    found = None
    for raw in identities or ():
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        principal = parse_uri(text)
        if principal is None:
            continue
        if found is not None and principal != found:
            return None  # two identities in one certificate: trust neither
        found = principal
    return found


_IDENTITIES_SEEN_MAX = 4096
_seen: dict[tuple, Principal | None] = {}


def peer_principal(context) -> Principal | None:
    """The principal of a gRPC server call's verified peer certificate; None without one (a plaintext
    server, or a certificate without exactly one replog URI)."""
    if context.peer_identity_key() != SAN_IDENTITY_KEY:
        return None  # no certificate, or one without SANs (its common name is no identity here)
    identities = tuple(context.peer_identities())
    try:
        return _seen[identities]
    except KeyError:
        pass
    principal = principal_of_identities(identities)
    if len(_seen) >= _IDENTITIES_SEEN_MAX:
        _seen.clear()
    _seen[identities] = principal
    return principal
