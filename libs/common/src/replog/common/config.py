"""Typed service configuration: one definition per service, read from flags,
environment and an optional TOML file, validated at start.

Each service declares a frozen dataclass whose fields carry a `setting(...)`
description. `load_config` builds the command-line parser from those fields,
so a key has exactly one name, one default and one validator (the owner of a
config key is the dataclass that declares it). Precedence, highest first:
command-line flag, environment variable `REPLOG_<KEY>`, the file named by
`--config`, the default. Any bad value raises `ConfigError` with a one-line
message naming the key, the value and what is allowed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

T = TypeVar("T")

Validator = Callable[[Any], "str | None"]


class ConfigError(Exception):
    """A configuration value is missing, malformed or out of range."""


class _UsageError(ConfigError):
    """argparse rejected the command line (unknown flag, missing value)."""


def setting(default: Any, help: str, validate: Validator | None = None) -> Any:
    """Describe one config key: its default, a help line and an optional validator.

    The validator returns None when the value is fine, else a short reason.
    """
    return dataclasses.field(default=default, metadata={"help": help, "validate": validate})


# --- validators -------------------------------------------------------------
# Each validator carries its rule as a phrase (`rule`), which the generated
# configuration reference (docs/configuration.md) prints beside the key.

def _with_rule(rule: str, check: Validator) -> Validator:
    check.rule = rule  # type: ignore[attr-defined]
    return check


def tcp_port(value: int) -> str | None:
    return None if 0 <= value <= 65535 else "must be a TCP port from 0 to 65535 (0 picks a free one)"


def positive(value: float) -> str | None:
    return None if value > 0 else "must be greater than 0"


def non_negative(value: float) -> str | None:
    return None if value >= 0 else "must be 0 or greater"


def between(low: int, high: int) -> Validator:
    def check(value: int) -> str | None:
        return None if low <= value <= high else f"must be from {low} to {high}"

    return _with_rule(f"from {low} to {high}", check)


def one_of(*choices: str) -> Validator:
    def check(value: str) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"

    return _with_rule(f"one of {', '.join(choices)}", check)


_ZK_HOST = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def zookeeper_connect(value: str) -> str | None:
    """host:port[,host:port...][/chroot]"""
    hosts, _, chroot = value.partition("/")
    if not hosts:
        return "must be host:port[,host:port...][/chroot]"
    for host in hosts.split(","):
        if not _ZK_HOST.match(host) or not 0 < int(host.rsplit(":", 1)[1]) <= 65535:
            return f"has a bad host:port '{host}' (expected host:port[,host:port...][/chroot])"
    if chroot and not re.match(r"^[A-Za-z0-9_.\-/]+$", chroot):
        return f"has a bad chroot '/{chroot}'"
    return None


_with_rule("a TCP port from 0 to 65535 (0 picks a free one)", tcp_port)
_with_rule("greater than 0", positive)
_with_rule("0 or greater", non_negative)
_with_rule("host:port[,host:port...][/chroot]", zookeeper_connect)


# --- loading ----------------------------------------------------------------

def env_name(field_name: str) -> str:
    return "REPLOG_" + field_name.upper()


def flag_name(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def _convert(field: dataclasses.Field, raw: Any, source: str) -> Any:
    kind = type(field.default) if field.default is not None else str
    if isinstance(raw, kind) and not (kind is int and isinstance(raw, bool)):
        return raw
    text = str(raw).strip()
    try:
        if kind is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        return text
    except ValueError:
        raise ConfigError(
            f"{source} {field.name}={text!r} is not a valid {kind.__name__}"
        ) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


def build_parser(cls: type, prog: str, description: str) -> argparse.ArgumentParser:
    from replog.common.version import version_line

    parser = _Parser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=version_line(prog))
    parser.add_argument("--config", metavar="FILE", help="TOML file with settings (keys as below, with underscores)")
    for field in dataclasses.fields(cls):
        kind = type(field.default) if field.default is not None else str
        metavar = {bool: "BOOL", int: "INT", float: "NUM"}.get(kind, "TEXT")
        parser.add_argument(
            flag_name(field.name),
            dest=field.name,
            default=None,
            metavar=metavar,
            help=f"{field.metadata.get('help', '')} (env {env_name(field.name)}; default {field.default!r})",
        )
    return parser


def load_config(
    cls: type[T],
    argv: Sequence[str] | None,
    env: Mapping[str, str] | None = None,
    *,
    prog: str,
    description: str = "",
) -> T:
    """Build a `cls` from flags, environment, optional file and defaults."""
    env = os.environ if env is None else env
    parser = build_parser(cls, prog, description)
    args = parser.parse_args(list(argv) if argv is not None else None)
    file_values: dict[str, Any] = {}
    if args.config:
        path = Path(args.config)
        try:
            file_values = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(file_values) - known)
        if unknown:
            raise ConfigError(f"config file {path} has unknown key(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        flag_value = getattr(args, field.name)
        if flag_value is not None:
            value = _convert(field, flag_value, "flag")
            source = f"flag {flag_name(field.name)}"
        elif env_name(field.name) in env:
            value = _convert(field, env[env_name(field.name)], "environment")
            source = f"environment {env_name(field.name)}"
        elif field.name in file_values:
            value = _convert(field, file_values[field.name], "config file")
            source = f"config file key {field.name}"
        else:
            value = field.default
            source = f"default {field.name}"
        check = field.metadata.get("validate")
        reason = check(value) if (check and value is not None) else None
        if reason:
            raise ConfigError(f"{source}={value!r} {reason}")
        values[field.name] = value
    return cls(**values)  # type: ignore[call-arg]
