"""`replog certs create-ca|issue|request|show`: certificates for real hosts, offline (no cluster needed).

Every replog process and user proves who it is with a certificate whose SAN URI names it
(`replog://broker/2`, docs/security.md) and whose other SANs are the host names and addresses it is
reached at, since peers check those as any TLS client does. `create-ca` makes a CA for a cluster;
`issue` signs a certificate with it, or with an organisation's own CA (`--ca-cert` / `--ca-key`, EC or
RSA); `request` writes a key and a signing request for a CA whose key stays with its owner; `show`
prints what a certificate names and until when. Rotation needs no restart: a process rereads its files
when they change (docs/deploy.md, "Rotating certificates").
"""

from __future__ import annotations

import datetime
from pathlib import Path

from replog.cli.output import CliError, emit
from replog.common.security.certificates import (
    CA_VALIDITY_DAYS,
    DEFAULT_KEY_TYPE,
    KEY_TYPES,
    VALIDITY_DAYS,
    AuthorityError,
    authority_from_files,
    issue,
    new_authority,
    request,
)
from replog.common.security.principal import KINDS, Principal, parse_uri

def _days(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number of days") from None
    if not 1 <= value <= 36500:
        raise argparse.ArgumentTypeError(f"{value} days: must be from 1 to 36500")
    return value


def identity(text: str) -> Principal:
    """`broker/2`, `controller/1`, `gateway/1`, `user/alice`, or the full `replog://broker/2`."""
    import argparse

    principal = parse_uri(text if text.startswith("replog://") else f"replog://{text}")
    if principal is None:
        raise argparse.ArgumentTypeError(f"'{text}' is not an identity: expected KIND/NAME with KIND one of "
                                         f"{', '.join(KINDS)} (broker/2, user/alice)")
    if principal.kind in ("broker", "controller") and not principal.name.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}': a {principal.kind}'s name is its numeric id")
    return principal


def add_parser(sub) -> None:
    certs = sub.add_parser("certs", help="make a CA and certificates for real hosts (offline)")
    verbs = certs.add_subparsers(dest="verb", required=True)
    key_type = dict(choices=sorted(KEY_TYPES), default=DEFAULT_KEY_TYPE, help=f"key type (default {DEFAULT_KEY_TYPE})")

    ca = verbs.add_parser("create-ca", help="a new CA for one cluster: ca.pem (give it to every process) and ca.key")
    ca.add_argument("--out", required=True, metavar="DIR", help="directory for ca.pem and ca.key (made if missing)")
    ca.add_argument("--name", default="replog CA", help="the CA's common name")
    ca.add_argument("--days", type=_days, default=CA_VALIDITY_DAYS, help=f"validity (default {CA_VALIDITY_DAYS})")
    ca.add_argument("--key-type", **key_type)
    ca.set_defaults(run=create_ca)

    signed = verbs.add_parser("issue", help="a certificate and key for one process or user, signed by the CA")
    signed.add_argument("identity", type=identity, help="broker/2, controller/1, gateway/1 or user/NAME")
    where = signed.add_argument_group("the CA (one of)")
    where.add_argument("--ca-dir", metavar="DIR", help="a directory holding ca.pem and ca.key (create-ca's)")
    where.add_argument("--ca-cert", metavar="FILE", help="your organisation's CA certificate (PEM), with --ca-key")
    where.add_argument("--ca-key", metavar="FILE", help="its unencrypted PEM key (EC or RSA)")
    _host_options(signed)
    signed.add_argument("--days", type=_days, default=VALIDITY_DAYS, help=f"validity (default {VALIDITY_DAYS})")
    signed.add_argument("--key-type", **key_type)
    signed.set_defaults(run=run_issue)

    csr = verbs.add_parser("request", help="a key and a certificate signing request, for a CA that signs itself")
    csr.add_argument("identity", type=identity, help="broker/2, controller/1, gateway/1 or user/NAME")
    _host_options(csr)
    csr.add_argument("--key-type", **key_type)
    csr.set_defaults(run=run_request)

    show = verbs.add_parser("show", help="what a certificate names (identity, hosts) and its validity")
    show.add_argument("file", metavar="FILE", help="a PEM certificate")
    show.set_defaults(run=run_show)
    certs.set_defaults(offline=True)


def _host_options(parser) -> None:
    parser.add_argument("--host", action="append", default=[], metavar="NAME_OR_IP",
                        help="a host name or IP address the process is reached at (repeat; its advertised host must "
                             "be one); none for a user")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="directory for KIND-NAME.pem and KIND-NAME.key (made if missing)")


def _hosts(args) -> tuple[str, ...]:
    if args.identity.kind in ("broker", "controller", "gateway") and not args.host:
        raise CliError(f"{args.identity.kind}/{args.identity.name} needs at least one --host: the names and "
                       "addresses peers and clients reach it at")
    return tuple(dict.fromkeys(args.host))


def create_ca(args) -> int:
    out = Path(args.out)
    if (out / "ca.key").exists():
        raise CliError(f"{out / 'ca.key'} exists: a new CA would orphan every certificate it signed; "
                       "choose another --out")
    authority = new_authority(out, args.name, key_type=args.key_type, validity_days=args.days)
    emit(args.output, {"ca_file": str(authority.ca_file), "key_file": str(out / "ca.key")},
         lines=[f"CA '{args.name}': {authority.ca_file} (give it to every process and client) and "
                f"{out / 'ca.key'} (keep it private; only `replog certs issue` needs it)"])
    return 0


def _authority(args):
    if args.ca_dir and (args.ca_cert or args.ca_key):
        raise CliError("--ca-dir or --ca-cert with --ca-key, not both")
    if args.ca_dir:
        cert_file, key_file = Path(args.ca_dir) / "ca.pem", Path(args.ca_dir) / "ca.key"
    elif args.ca_cert and args.ca_key:
        cert_file, key_file = Path(args.ca_cert), Path(args.ca_key)
    else:
        raise CliError("name the CA: --ca-dir DIR, or --ca-cert FILE with --ca-key FILE")
    try:
        return authority_from_files(cert_file, key_file)
    except AuthorityError as exc:
        raise CliError(str(exc)) from None


def run_issue(args) -> int:
    hosts = _hosts(args)
    authority = _authority(args)
    files = issue(authority, args.identity, Path(args.out), hosts=hosts, key_type=args.key_type,
                  validity_days=args.days)
    emit(args.output, {"identity": args.identity.uri, "hosts": list(hosts), "ca_file": files.ca_file,
                       "cert_file": files.cert_file, "key_file": files.key_file},
         lines=[f"{args.identity.uri} for {', '.join(hosts) or 'no host'}: {files.cert_file} and {files.key_file}, "
                f"signed by {files.ca_file}, valid {args.days} days"])
    return 0


def run_request(args) -> int:
    hosts = _hosts(args)
    key_file, csr_file = request(args.identity, Path(args.out), hosts=hosts, key_type=args.key_type)
    emit(args.output, {"identity": args.identity.uri, "hosts": list(hosts), "key_file": str(key_file),
                       "request_file": str(csr_file)},
         lines=[f"{args.identity.uri}: have {csr_file} signed by your CA (keep its SANs and the serverAuth and "
                f"clientAuth usages), then put the certificate beside {key_file} as {csr_file.with_suffix('.pem')}"])
    return 0


def run_show(args) -> int:
    from cryptography import x509

    try:
        certificate = x509.load_pem_x509_certificate(Path(args.file).read_bytes())
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror}") from None
    except ValueError:
        raise CliError(f"{args.file} is not a PEM certificate") from None
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = x509.SubjectAlternativeName([])
    identities = names.get_values_for_type(x509.UniformResourceIdentifier)
    hosts = [*names.get_values_for_type(x509.DNSName), *(str(ip) for ip in names.get_values_for_type(x509.IPAddress))]
    until = certificate.not_valid_after_utc
    days_left = (until - datetime.datetime.now(datetime.timezone.utc)).days
    data = {"identity": identities, "hosts": hosts, "issuer": certificate.issuer.rfc4514_string(),
            "not_before": certificate.not_valid_before_utc.isoformat(), "not_after": until.isoformat(),
            "days_left": days_left}
    emit(args.output, data, lines=[f"identity   {', '.join(identities) or '(none: not a replog certificate)'}",
                                   f"hosts      {', '.join(hosts) or '-'}",
                                   f"issuer     {data['issuer']}",
                                   f"valid      {data['not_before']} to {data['not_after']} ({days_left} days left)"])
    return 0
