"""Which cells a run covers and for how long: the short form of the default suite, the long form
of `make test-faults`.

Three matrices share the workload and the checker: the process faults on the loopback cluster
(`test_fault_matrix.py`, faults.py), the network and ZooKeeper faults on a multi-host cluster
with a 3-server ensemble (`test_fault_matrix_network.py`, network_faults.py), and power loss on
clusters whose disks forget what was not fsynced (`test_power_loss_matrix.py`, power_loss.py).

`REPLOG_FAULT_LOAD_S` is the seconds of load per cell (half before the fault, at least half after
the heal). Unset, the short form: `SHORT_LOAD_S`. Neither matrix fits the default suite's budget
whole, so the short form runs one round of a rotation of each: its cells, in their fixed order,
dealt into `ROUNDS[matrix]` rounds (cell i into round i modulo the count, so every round mixes
faults and targets), the round chosen by a seed (`REPLOG_FAULT_SEED`, else the clock's seconds)
modulo the number of rounds. The seed is printed; consecutive seeds cover every cell of each. The
long form (`REPLOG_FAULT_LOAD_S` set, as `make test-faults` does) runs every cell of each.
`REPLOG_FAULT_CELLS` (comma-separated cell names, `fault-target` as in the test ids) runs only those
cells, of either matrix, to repeat one.
"""

from __future__ import annotations

import os
import time

from .faults import cells as process_cells
from .network_faults import network_cells
from .power_loss import power_loss_cells

SHORT_LOAD_S = 2.0
# short-form rounds: 4 of the 16 process cells, 2 or 3 of the 17 network, 1 of the 6 power-loss (the suite's
# time budget decided the counts); twelve consecutive seeds run every cell of each
ROUNDS = {"process": 4, "network": 6, "powerloss": 6}


def load_s() -> float:
    return float(os.environ.get("REPLOG_FAULT_LOAD_S", SHORT_LOAD_S))


def long_form() -> bool:
    return "REPLOG_FAULT_LOAD_S" in os.environ


def cell_name(fault: str, kind: str) -> str:
    return f"{fault}-{kind}"


SEED_ENV = "REPLOG_FAULT_SEED"


def seed() -> int:
    """The rotation's seed: REPLOG_FAULT_SEED, else the clock (read once per run)."""
    global _seed
    if _seed is None:
        _seed = int(os.environ.get(SEED_ENV) or int(time.time()))
    return _seed


_seed: int | None = None


def _wanted(every: list[tuple[str, str]]) -> list[str]:
    wanted = [name for name in os.environ.get("REPLOG_FAULT_CELLS", "").split(",") if name]
    known = {cell_name(f, k) for f, k in [*process_cells(), *network_cells(), *power_loss_cells()]}
    unknown = set(wanted) - known
    if unknown:
        raise ValueError(f"REPLOG_FAULT_CELLS names no cell {sorted(unknown)}; the cells are {sorted(known)}")
    return wanted


def rounds(matrix: str = "process") -> list[list[tuple[int, str, str]]]:
    """The cells of `matrix`, indexed, dealt into its ROUNDS: cell i into round i modulo the count."""
    indexed = [(i, fault, kind) for i, (fault, kind) in enumerate(_every(matrix))]
    count = ROUNDS[matrix]
    return [indexed[r::count] for r in range(count)]


def _every(matrix: str) -> list[tuple[str, str]]:
    return {"process": process_cells, "network": network_cells, "powerloss": power_loss_cells}[matrix]()


def chosen_cells(matrix: str = "process") -> list[tuple[int, str, str]]:
    """(index, fault, target kind) of the cells of `matrix` ("process" or "network") to run; the
    index names the cell's topics."""
    every = _every(matrix)
    wanted = _wanted(every)
    indexed = [(i, fault, kind) for i, (fault, kind) in enumerate(every)]
    if wanted:
        return [cell for cell in indexed if cell_name(*cell[1:]) in wanted]
    if long_form():
        return indexed
    all_rounds = rounds(matrix)
    return all_rounds[seed() % len(all_rounds)]


def describe_selection(matrix: str = "process") -> str:
    picked, total = len(chosen_cells(matrix)), len(_every(matrix))
    if os.environ.get("REPLOG_FAULT_CELLS"):
        which = f"{picked} of {total} cells (REPLOG_FAULT_CELLS)"
    elif picked == total:
        which = f"every cell ({total})"
    else:
        count = ROUNDS[matrix]
        which = (f"round {seed() % count + 1} of {count} of the rotation, {picked} of {total} cells "
                 f"(REPLOG_FAULT_SEED={seed()} replays it)")
    return f"{which}, {load_s():g} s of load each"
