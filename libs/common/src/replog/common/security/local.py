"""Where a local cluster (`replog-local`, deploy/local) keeps its certificates, and how clients
find theirs.

A local cluster's state directory holds `tls/`: the CA (`ca.pem`, `ca.key`), one certificate per
process (`broker-2.pem` / `broker-2.key`, ...) and the operator's (`user-admin.pem` /
`user-admin.key`, identity `replog://user/admin`) for the CLI, tests and health checks, plus
`tls/env`, a shell file exporting REPLOG_TLS_* for other tools. A cluster started with `--insecure`
leaves the marker file `insecure` instead.

Clients (the CLI, the client library, the Spark source, the benchmarks) resolve their TLS in this
order: explicit arguments; `REPLOG_INSECURE` / `REPLOG_TLS_CA_FILE`, `REPLOG_TLS_CERT_FILE`,
`REPLOG_TLS_KEY_FILE` in the environment (the services' own key names); the local cluster's
operator certificate in `$REPLOG_STATE_DIR` (default `.state`). With none of these a client
refuses to start and says what to pass.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from replog.common.config import env_name
from replog.common.security.files import TlsFiles
from replog.common.security.principal import Principal

TLS_DIR = "tls"
INSECURE_MARKER = "insecure"
ENV_FILE = "env"
OPERATOR = Principal("user", "admin")
STATE_DIR_ENV = "REPLOG_STATE_DIR"
DEFAULT_STATE_DIR = ".state"
ENV_CA, ENV_CERT, ENV_KEY, ENV_INSECURE = (env_name(k) for k in ("tls_ca_file", "tls_cert_file", "tls_key_file",
                                                                 "insecure"))
TRUE_WORDS = ("1", "true", "yes", "on")


class ClientTlsError(Exception):
    """The client has no certificate to use and was not told to run plaintext."""


@dataclass(frozen=True)
class TlsSettingNames:
    """How a client's user spells the explicit settings, so an error names what they can pass."""

    ca_file: str
    cert_file: str
    key_file: str
    insecure: str

    def files(self) -> tuple[str, str, str]:
        return (self.ca_file, self.cert_file, self.key_file)


CLI_FLAGS = TlsSettingNames("--tls-ca-file", "--tls-cert-file", "--tls-key-file", "--insecure")
ENV_NAMES = TlsSettingNames(ENV_CA, ENV_CERT, ENV_KEY, ENV_INSECURE)


def tls_dir(state_dir: Path) -> Path:
    return Path(state_dir) / TLS_DIR


def stem(principal: Principal) -> str:
    return f"{principal.kind}-{principal.name}"


def files_of(state_dir: Path, principal: Principal) -> TlsFiles:
    """The files of `principal` in a local cluster's state directory."""
    directory = tls_dir(state_dir)
    return TlsFiles(str(directory / "ca.pem"), str(directory / f"{stem(principal)}.pem"),
                    str(directory / f"{stem(principal)}.key"))


def env_exports(files: TlsFiles) -> str:
    """A shell file that points other tools at `files` (`. .state/tls/env`)."""
    return "".join(f"export {name}={path}\n" for name, path in
                   ((ENV_CA, files.ca_file), (ENV_CERT, files.cert_file), (ENV_KEY, files.key_file)))


def resolve_client_tls(ca_file: str | None = None, cert_file: str | None = None, key_file: str | None = None,
                       *, insecure: bool = False, env: Mapping[str, str] | None = None,
                       names: TlsSettingNames = CLI_FLAGS) -> TlsFiles | None:
    """The files a client uses (None: plaintext), by the order in the module docstring. ``names``: how the
    caller's user spells the explicit settings (flags, or a data source's options), for the errors."""
    env = os.environ if env is None else env
    if insecure:
        return None
    explicit = (ca_file, cert_file, key_file)
    if any(explicit):
        return _all_three(explicit, names)
    if env.get(ENV_INSECURE, "").strip().lower() in TRUE_WORDS:
        return None
    from_env = (env.get(ENV_CA), env.get(ENV_CERT), env.get(ENV_KEY))
    if any(from_env):
        return _all_three(from_env, ENV_NAMES)
    state_dir = Path(env.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)
    if (state_dir / INSECURE_MARKER).exists():
        return None
    local = files_of(state_dir, OPERATOR)
    if all(Path(p).exists() for p in local.paths()):
        return local
    raise ClientTlsError(
        f"no TLS certificate to call the cluster with: pass {_listed(names.files())} "
        f"(or set {_listed(ENV_NAMES.files())}, or {STATE_DIR_ENV} to a replog-local state directory), "
        f"or {names.insecure} for a cluster running without TLS")


def _all_three(paths, names: TlsSettingNames) -> TlsFiles:
    if not all(paths):
        missing = [name for name, path in zip(names.files(), paths) if not path]
        raise ClientTlsError(f"{_listed(names.files())} go together: set all three (missing: {', '.join(missing)})")
    return TlsFiles(*paths)


def _listed(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} and {names[-1]}"
