"""Which cells a run covers and for how long: the short form of the default suite, the long form
of `make test-faults`.

`REPLOG_FAULT_LOAD_S` is the seconds of load per cell (half before the fault, at least half after
the heal). Unset, the short form: `SHORT_LOAD_S`, every cell (the matrix fits the default suite's
budget of about 4 minutes this way). `make test-faults` sets it to 300, the long form.
`REPLOG_FAULT_CELLS` (comma-separated cell names, `fault-target` as in the test ids) runs only
those cells, to repeat one.
"""

from __future__ import annotations

import os

from .faults import cells

SHORT_LOAD_S = 2.0


def load_s() -> float:
    return float(os.environ.get("REPLOG_FAULT_LOAD_S", SHORT_LOAD_S))


def cell_name(fault: str, kind: str) -> str:
    return f"{fault}-{kind}"


def chosen_cells() -> list[tuple[int, str, str]]:
    """(index, fault, target kind) of the cells to run; the index names the cell's topics."""
    every = [(i, fault, kind) for i, (fault, kind) in enumerate(cells())]
    wanted = [name for name in os.environ.get("REPLOG_FAULT_CELLS", "").split(",") if name]
    unknown = set(wanted) - {cell_name(fault, kind) for _, fault, kind in every}
    if unknown:
        raise ValueError(f"REPLOG_FAULT_CELLS names no cell {sorted(unknown)}; the cells are "
                         f"{[cell_name(f, k) for _, f, k in every]}")
    return [cell for cell in every if not wanted or cell_name(*cell[1:]) in wanted]


def describe_selection() -> str:
    picked, total = len(chosen_cells()), len(cells())
    which = f"every cell ({total})" if picked == total else f"{picked} of {total} cells (REPLOG_FAULT_CELLS)"
    return f"{which}, {load_s():g} s of load each"
