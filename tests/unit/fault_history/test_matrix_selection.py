"""Which cells of the fault matrices a run covers: a seeded round of each matrix's cells in the short
form, every cell in the long form, and only the cells named when asked."""

from __future__ import annotations

import pytest

from tests.fault.history import matrix
from tests.fault.history.network_faults import NETWORK_FAULTS, NOT_APPLICABLE, network_cells


@pytest.fixture
def env(monkeypatch):
    for name in ("REPLOG_FAULT_LOAD_S", "REPLOG_FAULT_CELLS", "REPLOG_FAULT_SEED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(matrix, "_seed", None)

    def set_seed(seed: int) -> None:
        monkeypatch.setenv("REPLOG_FAULT_SEED", str(seed))
        monkeypatch.setattr(matrix, "_seed", None)
    return set_seed


@pytest.mark.parametrize("which, every", [("process", matrix.process_cells), ("network", network_cells)])
def test_consecutive_seeds_cover_every_cell_and_a_seed_replays_its_round(env, which, every):
    count = len(matrix.rounds(which))
    assert count > 1, "the short form would run every cell: no rotation needed"
    covered = []
    for seed in range(1000, 1000 + count):
        env(seed)
        chosen = matrix.chosen_cells(which)
        assert chosen, f"seed {seed} runs no {which} cell"
        covered += chosen
        assert f"REPLOG_FAULT_SEED={seed}" in matrix.describe_selection(which)
    assert sorted(covered) == [(i, f, k) for i, (f, k) in enumerate(every())]
    env(1000)
    assert matrix.chosen_cells(which) == covered[:len(matrix.chosen_cells(which))]


def test_a_round_mixes_faults_and_targets(env):
    for which in ("process", "network"):
        for cells in matrix.rounds(which):
            assert len({fault for _, fault, _ in cells}) > 1 and len({kind for _, _, kind in cells}) > 1, cells


def test_the_long_form_runs_every_cell_of_both(env, monkeypatch):
    monkeypatch.setenv("REPLOG_FAULT_LOAD_S", "300")
    assert len(matrix.chosen_cells("process")) == len(matrix.process_cells())
    assert len(matrix.chosen_cells("network")) == len(network_cells())
    assert matrix.describe_selection("network").startswith("every cell (17)")


def test_named_cells_run_alone_in_either_matrix_and_unknown_names_are_refused(env, monkeypatch):
    monkeypatch.setenv("REPLOG_FAULT_CELLS", "kill-9-leader,zk-restart-zk-ensemble")
    assert [c[1:] for c in matrix.chosen_cells("process")] == [("kill-9", "leader")]
    assert [c[1:] for c in matrix.chosen_cells("network")] == [("zk-restart", "zk-ensemble")]
    monkeypatch.setenv("REPLOG_FAULT_CELLS", "isolate-gateway")
    with pytest.raises(ValueError, match="names no cell"):
        matrix.chosen_cells("network")


def test_every_pair_of_a_network_fault_and_a_process_target_runs_or_is_skipped_with_a_reason():
    for fault in NETWORK_FAULTS.values():
        if fault.name.startswith("zk-"):
            continue
        for kind in ("leader", "follower", "controller"):
            assert (kind in fault.kinds) != ((fault.name, kind) in NOT_APPLICABLE), (fault.name, kind)
