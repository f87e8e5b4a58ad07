"""Human tables (rich) or JSON for scripts; errors in one line."""

from __future__ import annotations

import io
import json
import sys
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table


TABLE_WIDTH_MAX = 1000


class CliError(Exception):
    """A failure to report in one line with exit code 1."""


def emit(output: str, data: Any, table: tuple[str, Sequence[str], Sequence[Sequence[Any]]] | None = None,
         lines: Sequence[str] = ()) -> None:
    if output == "json":
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
        return
    for line in lines:
        print(line)
    if table is not None:
        print(render_table(*table))


def render_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An aligned table, never truncated to the terminal's width (long lines wrap, as kafka-topics' do)."""
    buffer = io.StringIO()
    console = Console(file=buffer, highlight=False, soft_wrap=True, width=TABLE_WIDTH_MAX, color_system=None)
    t = Table(title=title or None, title_justify="left", box=None, pad_edge=False)
    for column in columns:
        t.add_column(column, no_wrap=True)
    for row in rows:
        t.add_row(*("-" if cell is None or cell == "" else str(cell) for cell in row))
    console.print(t)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").split("\n"))


def fail(message: str) -> int:
    print(f"replog: error: {message}", file=sys.stderr)
    return 1


def id_list(ids) -> str:
    """Broker ids as kafka-topics prints them: 1,2,3 (empty when none)."""
    return ",".join(str(i) for i in ids)


def tp_label(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"
