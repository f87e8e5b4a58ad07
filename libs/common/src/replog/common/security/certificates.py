"""Certificate material for a cluster: a throwaway CA and one certificate per process or user.

For local clusters and tests; a production cluster brings certificates from its own CA, with the
same SAN URI (`replog://<kind>/<name>`, principal.py) and a SAN for each host name or address the
process is reached at, so that ordinary host-name verification works. Keys are ECDSA P-256: a
handshake costs a fraction of an RSA one. Files are PEM: `<stem>.pem` (certificate) beside
`<stem>.key` (PKCS#8 key, readable by the owner only).

Expired certificates and certificates from another CA are made with the same functions (the
`valid_from` / `valid_until` arguments, a second `new_authority`), for tests of refusals.

For real hosts, `replog certs` (replog.cli.certs) drives the same functions with a key type, a validity
and each host's names: an organisation's own CA (any EC or RSA CA certificate and key,
`authority_from_files`) signs as well as one made here, and `request` writes a key and a certificate
signing request with the right SANs for a CA whose key never leaves its owner.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from replog.common.security.files import TlsFiles
from replog.common.security.principal import Principal

LOCAL_HOSTS = ("127.0.0.1", "localhost")
VALIDITY_DAYS = 365
CLOCK_SKEW = datetime.timedelta(minutes=5)  # certificates are valid from a little before they are made
# Key types a certificate or CA can have, the first the default.
KEY_TYPES = {
    "ec-p256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ec-p384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "rsa-2048": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "rsa-3072": lambda: rsa.generate_private_key(public_exponent=65537, key_size=3072),
    "rsa-4096": lambda: rsa.generate_private_key(public_exponent=65537, key_size=4096),
}
DEFAULT_KEY_TYPE = "ec-p256"
CA_VALIDITY_DAYS = 10 * VALIDITY_DAYS


class AuthorityError(ValueError):
    """A CA's files are missing, unreadable, not a CA, or its key is not its certificate's."""


@dataclass(frozen=True)
class Authority:
    """A CA: its certificate and key, in memory, and the PEM file of its certificate."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
    ca_file: Path


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    tmp.replace(path)  # readers never see half a file: reloading servers read it at any moment


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def new_authority(directory: Path, name: str = "replog local CA", *, stem: str = "ca",
                  key_type: str = DEFAULT_KEY_TYPE, validity_days: int = CA_VALIDITY_DAYS) -> Authority:
    """Make a CA and write `<stem>.pem` and `<stem>.key` into `directory`."""
    key = KEY_TYPES[key_type]()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = _now()
    certificate = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + datetime.timedelta(days=validity_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    ca_file = Path(directory) / f"{stem}.pem"
    _write(ca_file, certificate.public_bytes(serialization.Encoding.PEM))
    _write(ca_file.with_suffix(".key"), _key_pem(key), private=True)
    return Authority(certificate, key, ca_file)


def load_authority(directory: Path, *, stem: str = "ca") -> Authority:
    """The CA written by `new_authority` into `directory`."""
    ca_file = Path(directory) / f"{stem}.pem"
    certificate = x509.load_pem_x509_certificate(ca_file.read_bytes())
    key = serialization.load_pem_private_key(ca_file.with_suffix(".key").read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey), f"{ca_file.with_suffix('.key')} is not an EC key"
    return Authority(certificate, key, ca_file)


def authority_from_files(cert_file: Path, key_file: Path) -> Authority:
    """Any CA to sign with, an organisation's own included: a PEM certificate that may sign certificates
    and its unencrypted PEM key (EC or RSA)."""
    try:
        certificate = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
        key = serialization.load_pem_private_key(Path(key_file).read_bytes(), password=None)
    except OSError as exc:
        raise AuthorityError(f"cannot read {exc.filename}: {exc.strerror}") from None
    except (ValueError, TypeError) as exc:
        raise AuthorityError(f"{cert_file} / {key_file}: not a PEM certificate and unencrypted PEM key ({exc})") from None
    if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise AuthorityError(f"{key_file} is a {type(key).__name__}; a CA key must be EC or RSA")
    try:
        is_ca = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise AuthorityError(f"{cert_file} is not a CA certificate (no basicConstraints CA:TRUE)")
    if key.public_key().public_numbers() != certificate.public_key().public_numbers():
        raise AuthorityError(f"{key_file} is not the key of {cert_file}")
    return Authority(certificate, key, Path(cert_file))


def _san_entries(principal: Principal, hosts, with_identity: bool) -> list[x509.GeneralName]:
    entries: list[x509.GeneralName] = [x509.UniformResourceIdentifier(principal.uri)] if with_identity else []
    for host in hosts:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            entries.append(x509.DNSName(host))
    return entries


def issue(authority: Authority, principal: Principal, directory: Path, *, stem: str | None = None,
          hosts=LOCAL_HOSTS, valid_from: datetime.datetime | None = None,
          valid_until: datetime.datetime | None = None, with_identity: bool = True,
          key_type: str = DEFAULT_KEY_TYPE, validity_days: int = VALIDITY_DAYS) -> TlsFiles:
    """Make a certificate for `principal` signed by `authority`, valid for `hosts` (IP addresses and
    DNS names), and write `<stem>.pem` / `<stem>.key` (stem: `<kind>-<name>`) into `directory`.
    Returns the three files a process names in its configuration. `with_identity=False` leaves the SAN
    URI out (a certificate of the CA that names nobody: for tests of refusals)."""
    key = KEY_TYPES[key_type]()
    now = _now()
    not_before = valid_from or now - CLOCK_SKEW
    not_after = valid_until or now + datetime.timedelta(days=validity_days)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, principal.uri)]))
        .issuer_name(authority.certificate.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(_san_entries(principal, hosts, with_identity)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()),
                       critical=False)
        .sign(authority.key, hashes.SHA256())
    )
    stem = stem or f"{principal.kind}-{principal.name}"
    cert_file, key_file = Path(directory) / f"{stem}.pem", Path(directory) / f"{stem}.key"
    _write(key_file, _key_pem(key), private=True)
    _write(cert_file, certificate.public_bytes(serialization.Encoding.PEM))
    return TlsFiles(str(authority.ca_file), str(cert_file), str(key_file))


def request(principal: Principal, directory: Path, *, hosts=LOCAL_HOSTS, key_type: str = DEFAULT_KEY_TYPE,
            stem: str | None = None) -> tuple[Path, Path]:
    """For a CA that signs requests itself: write a new key `<stem>.key` and a certificate signing request
    `<stem>.csr` naming `principal` (the SAN URI) and `hosts`, with the key usages `issue` gives. Returns
    (key file, request file); the signed certificate goes beside them as `<stem>.pem`."""
    key = KEY_TYPES[key_type]()
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, principal.uri)]))
        .add_extension(x509.SubjectAlternativeName(_san_entries(principal, hosts, True)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    stem = stem or f"{principal.kind}-{principal.name}"
    key_file, csr_file = Path(directory) / f"{stem}.key", Path(directory) / f"{stem}.csr"
    _write(key_file, _key_pem(key), private=True)
    _write(csr_file, csr.public_bytes(serialization.Encoding.PEM))
    return key_file, csr_file
