"""Human tables (rich) or JSON for scripts; errors in one line."""

from __future__ import annotations

import json
import sys
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table


class CliError(Exception):
    """A failure to report in one line with exit code 1."""


def emit(output: str, data: Any, table: tuple[str, Sequence[str], Sequence[Sequence[Any]]] | None = None,
         lines: Sequence[str] = ()) -> None:
    if output == "json":
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
        return
    console = Console(highlight=False, soft_wrap=True)
    for line in lines:
        console.print(line)
    if table is not None:
        title, columns, rows = table
        t = Table(title=title or None, title_justify="left", box=None, pad_edge=False)
        for column in columns:
            t.add_column(column)
        for row in rows:
            t.add_row(*("-" if cell is None or cell == "" else str(cell) for cell in row))
        console.print(t)


def fail(message: str) -> int:
    print(f"replog: error: {message}", file=sys.stderr)
    return 1
