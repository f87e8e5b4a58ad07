"""Where the CLI finds the gateway: --gateway, REPLOG_GATEWAY, the local
cluster's state file (.state/cluster.json), or 127.0.0.1:9090."""

from __future__ import annotations

import json
import os
from pathlib import Path

import grpc

from replog.cli.output import CliError
from replog.common.security.files import TlsFiles

DEFAULT_GATEWAY = "127.0.0.1:9090"


def resolve_gateway(flag: str | None) -> str:
    if flag:
        return flag
    if os.environ.get("REPLOG_GATEWAY"):
        return os.environ["REPLOG_GATEWAY"]
    state = Path(os.environ.get("REPLOG_STATE_DIR", ".state")) / "cluster.json"
    if state.exists():
        try:
            port = json.loads(state.read_text())["processes"]["gateway-1"]["port"]
            return f"127.0.0.1:{port}"
        except (KeyError, ValueError):
            pass
    return DEFAULT_GATEWAY


def describe_rpc_error(exc: grpc.RpcError, address: str, tls: TlsFiles | None = None) -> CliError:
    code = exc.code() if hasattr(exc, "code") else None
    if code == grpc.StatusCode.UNAVAILABLE:
        how = (f"over TLS with {tls.cert_file}: a cluster run with --insecure needs --insecure, another cluster "
               "its own --tls-* files" if tls is not None else
               "in plaintext (--insecure): a cluster with TLS needs --tls-ca-file, --tls-cert-file, --tls-key-file")
        return CliError(f"cannot reach the gateway at {address} (is the cluster up? try `make up` or --gateway; "
                        f"tried {how})")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return CliError(f"the gateway at {address} did not answer in time")
    details = exc.details() if hasattr(exc, "details") else str(exc)
    name = code.name if code else "ERROR"
    return CliError(f"{details} ({name})")
