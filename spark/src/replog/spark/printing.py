"""Plain-text tables for the jobs' printed output (no dependency beyond the standard library)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return ",".join(cell(v) for v in value)
    return str(value)


def table(title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """An aligned table with a title line; numbers right-aligned."""
    if not rows:
        return f"{title}\n(none)"
    columns = list(columns or rows[0].keys())
    texts = [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(t[i]) for t in texts)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(row.get(c), (int, float)) or row.get(c) is None for row in rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()

    return "\n".join([title, line([c.upper() for c in columns]), *(line(t) for t in texts)])


def key_values(title: str, values: Mapping[str, Any]) -> str:
    width = max(len(k) for k in values)
    return "\n".join([title, *(f"  {k.ljust(width)}  {cell(v)}" for k, v in values.items())])
