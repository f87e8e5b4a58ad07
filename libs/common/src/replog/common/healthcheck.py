"""`replog-healthcheck`: is the replog service of this container (or host) serving? Exit 0 if its gRPC
health service says SERVING, 1 otherwise, with one line saying what it saw. With `--live` (a liveness
probe), exit 0 whenever the service answers at all: one waiting for ZooKeeper answers NOT_SERVING, and
restarting it would not bring ZooKeeper back.

For container health checks and Kubernetes exec probes: Kubernetes' own gRPC probe speaks plaintext, and
every replog service speaks mutual TLS. So this program reads the service's settings exactly as the
service did (replog.common.config: its command line, then REPLOG_* in the environment, then its --config
file), from the command line of the container's main process (`/proc/1/cmdline`, which names the role
too) unless given one, and calls the port it listens on with the service's own certificate (the health
service answers any principal of the cluster's CA). A wildcard `host` is called at 127.0.0.1, checked
against the advertised host's name, which the certificate must carry.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

ROLE_CONFIGS = {"broker": "replog.broker.config:BrokerConfig",
                "controller": "replog.controller.config:ControllerConfig",
                "gateway": "replog.gateway.config:GatewayConfig"}
WILDCARDS = ("0.0.0.0", "::", "[::]")
EXIT_SERVING, EXIT_NOT_SERVING = 0, 1


class HealthcheckError(Exception):
    pass


def service_command(pid: int = 1) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError as exc:
        raise HealthcheckError(f"cannot read the command line of process {pid}: {exc.strerror}") from None
    return [part.decode() for part in raw.split(b"\0") if part]


def role_and_arguments(command: list[str]) -> tuple[str, list[str]]:
    """(role, its arguments) from a service's command line: `replog-broker --config f` or a
    `python .../replog-broker ...` launcher's."""
    for index, part in enumerate(command):
        name = os.path.basename(part)
        if name.startswith("replog-") and name.removeprefix("replog-") in ROLE_CONFIGS:
            return name.removeprefix("replog-"), command[index + 1:]
    raise HealthcheckError(f"no replog service in the command line {' '.join(command)!r}: pass --role "
                           f"({', '.join(ROLE_CONFIGS)}) and the service's arguments after --")


def target(config) -> tuple[str, str | None]:
    """(address to call, TLS name to check or None) for a loaded service config."""
    published = getattr(config, "published_host", config.host)
    host = "127.0.0.1" if config.host in WILDCARDS else config.host
    name = published if published not in WILDCARDS and published != host else None
    return f"{host}:{config.port}", name


def check(role: str, arguments: list[str], timeout_s: float, *, live: bool = False) -> tuple[bool, str]:
    from replog.common import grpc_runtime
    from replog.common.config import load_config

    grpc_runtime.configure()
    module, _, name = ROLE_CONFIGS[role].partition(":")
    config = load_config(getattr(importlib.import_module(module), name), arguments, prog=f"replog-{role}")
    address, tls_name = target(config)

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from replog.common.security.credentials import open_channel
    from replog.common.security.files import TlsFiles

    files = None if config.insecure else TlsFiles(config.tls_ca_file, config.tls_cert_file, config.tls_key_file)
    options = [("grpc.ssl_target_name_override", tls_name)] if tls_name and files else []
    try:
        with open_channel(address, files, options) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
    except grpc.RpcError as exc:
        return False, f"replog-{role} at {address}: {exc.code().name} {exc.details() or ''}".rstrip()
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return live or reply.status == health_pb2.HealthCheckResponse.SERVING, f"replog-{role} at {address}: {status}"


def main(argv: list[str] | None = None) -> int:
    from replog.common.version import version_line

    parser = argparse.ArgumentParser(prog="replog-healthcheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=version_line("replog-common"))
    parser.add_argument("--role", choices=sorted(ROLE_CONFIGS), help="the service (default: from the command line "
                                                                      "of process 1)")
    parser.add_argument("--timeout-s", type=float, default=3.0, help="deadline of the health call (default 3)")
    parser.add_argument("--live", action="store_true", help="any answer will do (NOT_SERVING included): liveness")
    parser.add_argument("arguments", nargs=argparse.REMAINDER,
                        help="with --role: the service's arguments, after -- (default: process 1's)")
    args = parser.parse_args(argv)
    from replog.common.config import ConfigError

    try:
        if args.role:
            role, arguments = args.role, [a for a in args.arguments if a != "--"]
        else:
            role, arguments = role_and_arguments(service_command())
        serving, line = check(role, arguments, args.timeout_s, live=args.live)
    except (HealthcheckError, ConfigError) as exc:
        print(f"replog-healthcheck: {exc}", file=sys.stderr)
        return EXIT_NOT_SERVING
    print(line)
    return EXIT_SERVING if serving else EXIT_NOT_SERVING


if __name__ == "__main__":
    sys.exit(main())
