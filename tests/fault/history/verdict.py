"""What both fault matrices (test_fault_matrix.py, test_fault_matrix_network.py) conclude from a cell and
from the whole run: a cell fails on any violation or missed availability goal; at the end, every ISR
member's files must hold the same records below the high watermark."""

from __future__ import annotations

import pytest

from . import checker
from .cells import CellResult
from .history import History
from .replica_logs import read_replica


def judge_cell(cluster, result: CellResult, fault: str, kind: str, history: History, dump_to) -> None:
    """pytest.fail with the evidence when the cell's history shows a violation or a goal was missed."""
    report = result.report
    missed = {goal: (round(getattr(report, goal), 2), round(bound, 2), report.slowest(goal)[0])
              for goal, bound in result.goals.items() if getattr(report, goal) > bound}
    if report.violations or missed:
        pytest.fail(f"{fault} on {kind} {result.targets}: {len(report.violations)} violations, goals missed "
                    f"(value, bound, slowest partition): {missed}\n{checker.evidence(report)}\n"
                    f"history: {history.dump(dump_to)}; logs: {cluster.log_dir}")


def replica_violations(cluster, results: list[CellResult]) -> list:
    """Read every ISR member's files (the cluster stopped) with the broker's own log reader and compare."""
    violations = []
    for result in results:
        for tp, isr in result.replicas.items():
            high_watermark = result.high_watermarks[tp]
            logs = {b: read_replica(cluster.data_dir(f"broker-{b}"), *tp, high_watermark) for b in isr}
            violations += checker.check_replicas(tp, high_watermark, result.final_digests[tp], logs)
    return violations
