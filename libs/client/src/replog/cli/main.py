"""replog: the admin and produce/consume command line.

Exit codes: 0 success, 1 error (one line on stderr), 2 usage.

It calls the cluster over mutual TLS with the certificate named by --tls-ca-file, --tls-cert-file and
--tls-key-file, else by REPLOG_TLS_* in the environment, else a local cluster's operator certificate
(`.state/tls`, or $REPLOG_STATE_DIR); --insecure for a cluster run without TLS (security/local.py).
"""

from __future__ import annotations

import argparse
import sys

import grpc

from replog.cli import (
    acls, certs, cluster, completion, data, elections, export, groups, quotas, reassign, records, topics, traces,
    zk_credentials,
)
from replog.cli.connection import describe_rpc_error, resolve_gateway
from replog.cli.output import CliError, fail
from replog.common.channels import CHANNEL_OPTIONS
from replog.common.security.credentials import open_channel
from replog.common.security.files import TlsFilesError
from replog.common.security.local import ClientTlsError, resolve_client_tls
from replog.common.version import version_line

TLS_OPTIONS = (
    ("--tls-ca-file", dict(metavar="FILE", help="PEM file of the cluster's CA (default: $REPLOG_TLS_CA_FILE, "
                                                "or the local cluster's)")),
    ("--tls-cert-file", dict(metavar="FILE", help="PEM file of your certificate (default: $REPLOG_TLS_CERT_FILE, "
                                                  "or the local cluster's operator certificate)")),
    ("--tls-key-file", dict(metavar="FILE", help="PEM file of your key (default: $REPLOG_TLS_KEY_FILE)")),
    ("--insecure", dict(action="store_true", help="plaintext, for a cluster run with --insecure")),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="replog", description="replog admin command line")
    parser.add_argument("--version", action="version", version=version_line("replog-client"))
    parser.add_argument("--gateway", metavar="HOST:PORT",
                        help="admin gateway (default: $REPLOG_GATEWAY, the local cluster, or 127.0.0.1:9090)")
    parser.add_argument("--output", "-o", choices=["table", "json"], default="table", help="output format")
    for flag, options in TLS_OPTIONS:
        parser.add_argument(flag, **options)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (topics, reassign, elections, records, cluster, export, traces, acls, quotas, groups):
        group.add_parser(sub)
    data.add_parsers(sub)
    completion.add_parser(sub, parser)
    for offline in (certs, zk_credentials):  # files only: no gateway, no channel
        offline.add_parser(sub)
    _accept_global_options_anywhere(parser)
    return parser


def _accept_global_options_anywhere(parser: argparse.ArgumentParser) -> None:
    """`replog topics list -o json` as well as `replog -o json topics list`: every command
    also takes --gateway and --output; SUPPRESS keeps the top-level value when not repeated."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if any(isinstance(a, argparse._SubParsersAction) for a in child._actions):
                    _accept_global_options_anywhere(child)
                    continue
                if "--gateway" not in child._option_string_actions:
                    child.add_argument("--gateway", metavar="HOST:PORT", default=argparse.SUPPRESS,
                                       help="admin gateway (as before the command)")
                if "--output" not in child._option_string_actions and "-o" not in child._option_string_actions:
                    child.add_argument("--output", "-o", choices=["table", "json"], default=argparse.SUPPRESS,
                                       help="output format (as before the command)")
                for flag, options in TLS_OPTIONS:
                    if flag not in child._option_string_actions:
                        child.add_argument(flag, **{**options, "default": argparse.SUPPRESS,
                                                    "help": "as before the command"})


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on a usage error
    if getattr(args, "offline", False):
        return _run_offline(args)
    address = resolve_gateway(args.gateway)
    try:
        if not getattr(args, "needs_gateway", True):  # local files only (`replog trace`): no certificate, no channel
            return args.run(args, None)
        args.tls = resolve_client_tls(args.tls_ca_file, args.tls_cert_file, args.tls_key_file, insecure=args.insecure)
        with open_channel(address, args.tls, CHANNEL_OPTIONS) as channel:
            return args.run(args, channel)
    except (ClientTlsError, TlsFilesError) as exc:
        return fail(str(exc))
    except grpc.RpcError as exc:
        return fail(str(describe_rpc_error(exc, address, args.tls)))
    except CliError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the promise is one line, never a traceback
        return fail(f"unexpected {type(exc).__name__}: {exc}")


def _run_offline(args) -> int:
    """A command that needs no cluster: it writes or reads files only (certs, zk-credentials), or prints
    (completion)."""
    try:
        return args.run(args)
    except CliError as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"{exc.filename or ''}: {exc.strerror}" if exc.strerror else str(exc))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
