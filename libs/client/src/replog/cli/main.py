"""replog: the admin and produce/consume command line.

Exit codes: 0 success, 1 error (one line on stderr), 2 usage.
"""

from __future__ import annotations

import argparse
import sys

import grpc

from replog.cli import cluster
from replog.cli.connection import describe_rpc_error, resolve_gateway
from replog.cli.output import CliError, fail
from replog.common.channels import CHANNEL_OPTIONS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="replog", description="replog admin command line")
    parser.add_argument("--gateway", metavar="HOST:PORT",
                        help="admin gateway (default: $REPLOG_GATEWAY, the local cluster, or 127.0.0.1:9090)")
    parser.add_argument("--output", "-o", choices=["table", "json"], default="table", help="output format")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cluster.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on a usage error
    address = resolve_gateway(args.gateway)
    try:
        with grpc.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
            return args.run(args, channel)
    except grpc.RpcError as exc:
        return fail(str(describe_rpc_error(exc, address)))
    except CliError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
