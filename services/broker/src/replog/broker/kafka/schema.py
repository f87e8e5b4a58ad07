"""A small declarative form of Kafka's message schemas, and the codec that reads and writes it.

A message is a tuple of `Field`s; a field names its type and the versions that carry it (Kafka's
`"versions": "3+"`, `"nullableVersions"`). A type is a primitive name ("int32", "string", ...),
`Array(type)` or a nested struct (a tuple of fields). Versions at or above an API's first flexible
version use the compact forms and end every struct with tagged fields (KIP-482); the tags sent to us
are skipped, none are written. Decoded messages are plain dicts keyed by field name; encoding takes
the same dicts and writes a field's default (0, "", empty, or null where nullable) when it is absent.

Pure: apis.py declares the messages, server.py frames them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from replog.broker.kafka.wire import Reader, WireError, Writer

ANY_VERSION = 1 << 15


@dataclass(frozen=True)
class Array:
    item: "Type"


Type = Union[str, Array, tuple]


@dataclass(frozen=True)
class Field:
    name: str
    type: Type
    since: int = 0
    until: int = ANY_VERSION
    nullable_since: int = ANY_VERSION
    default: Any = None

    def present(self, version: int) -> bool:
        return self.since <= version <= self.until

    def nullable(self, version: int) -> bool:
        return version >= self.nullable_since


def f(name: str, type_: Type, versions: str = "0+", *, nullable: str | None = None, default: Any = None) -> Field:
    """A field in Kafka's notation: versions "3+", "1-4" or "0"; nullable likewise ("1+")."""
    since, until = _range(versions)
    return Field(name, type_, since, until, _range(nullable)[0] if nullable else ANY_VERSION, default)


def _range(text: str) -> tuple[int, int]:
    if text.endswith("+"):
        return int(text[:-1]), ANY_VERSION
    low, _, high = text.partition("-")
    return int(low), int(high or low)


_FIXED_DEFAULTS = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float64": 0.0, "bool": False,
                   "string": "", "bytes": b"", "records": None, "uuid": bytes(16)}


# --- reading --------------------------------------------------------------------------------

def read_struct(reader: Reader, fields: tuple, version: int, flexible: bool) -> dict:
    out = {}
    for field in fields:
        if field.present(version):
            out[field.name] = _read(reader, field.type, field.nullable(version), version, flexible)
        else:
            out[field.name] = _default(field)
    if flexible:
        reader.skip_tagged_fields()
    return out


def _read(reader: Reader, type_: Type, nullable: bool, version: int, flexible: bool):
    if isinstance(type_, tuple):
        return read_struct(reader, type_, version, flexible)
    if isinstance(type_, Array):
        count = reader.array_length(compact=flexible)
        if count < 0:
            if not nullable:
                raise WireError("a null array where one is required")
            return None
        return [_read(reader, type_.item, False, version, flexible) for _ in range(count)]
    if type_ == "int32":
        return reader.int32()
    if type_ == "int16":
        return reader.int16()
    if type_ == "int64":
        return reader.int64()
    if type_ == "int8":
        return reader.int8()
    if type_ == "bool":
        return reader.boolean()
    if type_ == "string":
        return reader.string(compact=flexible, nullable=nullable)
    if type_ in ("bytes", "records"):
        return reader.bytes_(compact=flexible, nullable=nullable or type_ == "records")
    if type_ == "uuid":
        return reader.raw(16)
    if type_ == "float64":
        return reader.float64()
    raise AssertionError(f"unknown schema type {type_!r}")


def _default(field: Field):
    if field.default is not None:
        return field.default
    if isinstance(field.type, Array):
        return []
    if isinstance(field.type, tuple):
        return {}
    return _FIXED_DEFAULTS[field.type]


# --- writing --------------------------------------------------------------------------------

def write_struct(writer: Writer, fields: tuple, value: dict, version: int, flexible: bool) -> None:
    for field in fields:
        if field.present(version):
            item = value.get(field.name)
            if item is None and not field.nullable(version):
                item = _default(field)
            _write(writer, field.type, item, version, flexible)
    if flexible:
        writer.no_tagged_fields()


def _write(writer: Writer, type_: Type, value, version: int, flexible: bool) -> None:
    if isinstance(type_, tuple):
        write_struct(writer, type_, value or {}, version, flexible)
    elif isinstance(type_, Array):
        writer.array_length(None if value is None else len(value), compact=flexible)
        for item in value or ():
            _write(writer, type_.item, item, version, flexible)
    elif type_ == "int32":
        writer.int32(value)
    elif type_ == "int16":
        writer.int16(value)
    elif type_ == "int64":
        writer.int64(value)
    elif type_ == "int8":
        writer.int8(value)
    elif type_ == "bool":
        writer.boolean(value)
    elif type_ == "string":
        writer.string(value, compact=flexible)
    elif type_ in ("bytes", "records"):
        writer.bytes_(value, compact=flexible)
    elif type_ == "uuid":
        writer.raw(value)
    elif type_ == "float64":
        writer.float64(value)
    else:
        raise AssertionError(f"unknown schema type {type_!r}")
