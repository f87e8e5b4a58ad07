"""Kafka's JSON files for reassignments and elections, read strictly and written the same way.

Reassignment: {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}
(a "log_dirs" list per partition is accepted and ignored: replog has one log dir per broker).
Topics to move: {"version":1,"topics":[{"topic":"t"}]}.
Election: {"partitions":[{"topic":"t","partition":0}]}.
Record deletion (kafka-delete-records): {"partitions":[{"topic":"t","partition":0,"offset":42}],"version":1}
(offset -1: the high watermark).
A file that does not parse, or has the wrong shape, is one CliError naming the file and the problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from replog.cli.output import CliError

Assignment = list[tuple[str, int, list[int]]]


def _load(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CliError(f"{path} is not JSON: {exc}") from None


def _items(value: Any, key: str, path: str) -> list:
    if not isinstance(value, dict) or not isinstance(value.get(key), list):
        raise CliError(f"{path}: expected an object with a '{key}' list")
    return value[key]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_reassignment(path: str) -> Assignment:
    out: Assignment = []
    for index, item in enumerate(_items(_load(path), "partitions", path)):
        where = f"{path}: partitions[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
            raise CliError(f"{where} needs a string 'topic'")
        if not _is_int(item.get("partition")):
            raise CliError(f"{where} needs an integer 'partition'")
        replicas = item.get("replicas")
        if not isinstance(replicas, list) or not all(_is_int(r) for r in replicas):
            raise CliError(f"{where} needs 'replicas', a list of broker ids")
        out.append((item["topic"], item["partition"], list(replicas)))
    return out


def reassignment_json(entries: Iterable[tuple[str, int, Iterable[int]]]) -> dict:
    return {"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(list(r))}
        for t, p, r in sorted(entries, key=lambda e: (e[0], e[1]))
    ]}


def read_topics(path: str) -> list[str]:
    names = []
    for index, item in enumerate(_items(_load(path), "topics", path)):
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
            raise CliError(f"{path}: topics[{index}] needs a string 'topic'")
        names.append(item["topic"])
    return names


def read_partitions(path: str) -> list[tuple[str, int]]:
    out = []
    for index, item in enumerate(_items(_load(path), "partitions", path)):
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str) or not _is_int(item.get("partition")):
            raise CliError(f"{path}: partitions[{index}] needs a string 'topic' and an integer 'partition'")
        out.append((item["topic"], item["partition"]))
    return out


def read_offsets(path: str) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of a kafka-delete-records offset file."""
    value = _load(path)
    if isinstance(value, dict) and value.get("version", 1) != 1:
        raise CliError(f"{path}: unsupported version {value.get('version')!r}; expected 1")
    out = []
    for index, item in enumerate(_items(value, "partitions", path)):
        if (not isinstance(item, dict) or not isinstance(item.get("topic"), str)
                or not _is_int(item.get("partition")) or not _is_int(item.get("offset"))):
            raise CliError(f"{path}: partitions[{index}] needs a string 'topic', an integer 'partition' and an "
                           "integer 'offset' (-1 for the high watermark)")
        out.append((item["topic"], item["partition"], item["offset"]))
    return out


def write_json(path: str, value: dict) -> None:
    try:
        Path(path).write_text(json.dumps(value) + "\n")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
