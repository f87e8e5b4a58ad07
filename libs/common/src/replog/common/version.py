"""The version every replog program prints for `--version`: its distribution's, from the installed metadata
(one owner: the `version` of its pyproject.toml)."""

from __future__ import annotations

from importlib import metadata


def version_line(distribution: str) -> str:
    """`replog-broker 0.1.0`; a program run from a tree whose distribution is not installed says so."""
    try:
        return f"{distribution} {metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return f"{distribution} (version unknown: the {distribution} distribution is not installed)"
