"""The TLS configuration keys every service shares (their one owner), and what a process builds
from them.

Each service's config dataclass inherits `TlsSettings`, so the keys have one name, one default and
one help line in all three. TLS is on unless `insecure` is set: a service started without its
files stops at once, naming the flags to pass and `--insecure true` to run plaintext on purpose.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from replog.common.config import ConfigError, flag_name, setting
from replog.common.security.files import TlsFiles, TlsFilesError
from replog.common.security.principal import Principal


@dataclass(frozen=True)
class TlsSettings:
    tls_ca_file: str = setting("", "PEM file of the CA that signs every certificate of the cluster; peers must "
                                   "present a certificate it signed (mutual TLS)")
    tls_cert_file: str = setting("", "PEM file of this process's certificate, whose SAN URI names it "
                                     "(replog://broker/<id>, replog://controller/<id>, replog://gateway/<id>)")
    tls_key_file: str = setting("", "PEM file of this process's private key")
    insecure: bool = setting(False, "serve and call in plaintext, with no certificates and no authorization "
                                    "(an explicit opt-out: TLS is the default)")


TLS_KEYS = ("tls_ca_file", "tls_cert_file", "tls_key_file")


def tls_files(config: TlsSettings, identity: Principal, advertised_host: str = "") -> TlsFiles | None:
    """The process's TLS files, checked; None when the config opts out with `insecure`.

    Raises ConfigError naming the missing flags, or when the files cannot be used (unreadable, a key
    that is not the certificate's, a certificate that names another process, or one whose SAN IP
    addresses and DNS names leave out `advertised_host`, the name peers verify it against)."""
    if config.insecure:
        return None
    missing = [flag_name(key) for key in TLS_KEYS if not getattr(config, key)]
    if missing:
        raise ConfigError(
            f"TLS is on by default and {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: pass "
            f"{', '.join(flag_name(k) for k in TLS_KEYS)} (PEM files; `replog-local up` makes them under "
            f"<state-dir>/tls), or --insecure true to run without TLS")
    files = TlsFiles(config.tls_ca_file, config.tls_cert_file, config.tls_key_file)
    try:
        material = files.read()
    except TlsFilesError as exc:
        raise ConfigError(str(exc)) from None
    named = certificate_principal(material.certificate)
    if named != identity:
        raise ConfigError(f"{files.cert_file} names {named or 'no replog:// identity'}, but this process is "
                          f"{identity} (its SAN URI must be {identity.uri})")
    if advertised_host:
        hosts = certificate_hosts(material.certificate)
        if not host_matches(advertised_host, hosts):
            raise ConfigError(
                f"{files.cert_file} is valid for {', '.join(hosts) or 'no host'}, but this process advertises "
                f"{advertised_host}, which peers check it against: issue a certificate with a SAN for "
                f"{advertised_host}, or pass {flag_name('advertised_host')} with one of its hosts")
    return files


def certificate_hosts(certificate_pem: bytes) -> list[str]:
    """The IP addresses and DNS names in a PEM certificate's SAN."""
    from cryptography import x509

    certificate = x509.load_pem_x509_certificate(certificate_pem)
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(a) for a in san.get_values_for_type(x509.IPAddress)] + san.get_values_for_type(x509.DNSName)


def host_matches(host: str, certificate_hosts: list[str]) -> bool:
    """Whether host-name verification of `host` passes against these SAN entries: an exact address or
    name (names case-insensitive), or a `*.` wildcard standing for one leftmost label of a name."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    for entry in certificate_hosts:
        if address is not None:
            try:
                if ipaddress.ip_address(entry) == address:
                    return True
            except ValueError:
                pass
            continue
        name, pattern = host.lower().rstrip("."), entry.lower().rstrip(".")
        if name == pattern:
            return True
        if pattern.startswith("*.") and "." in name and name.split(".", 1)[1] == pattern[2:]:
            return True
    return False


def certificate_principal(certificate_pem: bytes) -> Principal | None:
    """The principal a PEM certificate's SAN URIs name (None if none or several)."""
    from cryptography import x509

    certificate = x509.load_pem_x509_certificate(certificate_pem)
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    from replog.common.security.principal import principal_of_identities

    return principal_of_identities(san.get_values_for_type(x509.UniformResourceIdentifier))
