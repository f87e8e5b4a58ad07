"""Argument types shared by the command groups; a bad value is a usage error (exit 2)."""

from __future__ import annotations

import argparse


def broker_list(text: str) -> list[int]:
    """'1,2,3' -> [1, 2, 3]."""
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("expected at least one broker id")
    return ids


def replica_assignment(text: str) -> list[list[int]]:
    """kafka-topics' --replica-assignment: '1:2:3,2:3:1' is partition 0 on 1,2,3 and partition 1 on 2,3,1."""
    partitions = []
    for index, part in enumerate(text.split(",")):
        try:
            replicas = [int(b) for b in part.split(":")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"partition {index} of {text!r} is not broker ids separated by ':' (like 1:2:3)") from None
        partitions.append(replicas)
    return partitions


def config_pair(text: str) -> tuple[str, str]:
    """'min.insync.replicas=2' -> ('min.insync.replicas', '2')."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive(text: str) -> int:
    value = non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value
