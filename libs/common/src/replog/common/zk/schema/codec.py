"""The JSON conventions every replog znode value follows, and the strict checks that read them.

Values are JSON objects with an integer `version` field, written compactly with sorted keys.
Decoders are strict: a value that is not the expected shape raises `ZkDataError` naming the
path and the problem, because a controller acting on a misread partition state could lose
data.
"""

from __future__ import annotations

import json
from typing import Any, Mapping


class ZkDataError(ValueError):
    """A znode holds data that is not the shape replog expects."""


def dump_json(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def load_json(data: bytes, path: str) -> dict[str, Any]:
    try:
        value = json.loads(data.decode() if data else "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZkDataError(f"{path}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ZkDataError(f"{path}: expected a JSON object, found {type(value).__name__}")
    if not isinstance(value.get("version"), int):
        raise ZkDataError(f"{path}: missing integer 'version' field")
    return value


def int_field(value: dict, key: str, path: str) -> int:
    item = value.get(key)
    if not isinstance(item, int) or isinstance(item, bool):
        raise ZkDataError(f"{path}: '{key}' must be an integer, found {item!r}")
    return item


def int_list(item: Any, what: str, path: str) -> tuple[int, ...]:
    if not isinstance(item, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in item):
        raise ZkDataError(f"{path}: {what} must be a list of integers, found {item!r}")
    return tuple(item)


def partition_map(item: Any, what: str, path: str) -> dict[int, tuple[int, ...]]:
    if item is None:
        return {}
    if not isinstance(item, dict):
        raise ZkDataError(f"{path}: '{what}' must be an object of partition -> replicas")
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in item.items():
        try:
            partition = int(key)
        except ValueError:
            raise ZkDataError(f"{path}: '{what}' has a non-numeric partition {key!r}") from None
        out[partition] = int_list(replicas, f"{what}[{key}]", path)
    return out
