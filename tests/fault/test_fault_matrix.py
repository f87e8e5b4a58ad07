"""The process-fault matrix (issue 39, sections 2 to 4): faults x targets under a recorded workload.

Each cell runs three idempotent acks=all producers and two consumers over fresh topics, injects
its fault into its target (the leader or a follower of the RF 3 topic's partition 0, the active
controller, or every broker and controller), heals it, lets the cluster settle and checks the
history against the final logs: nothing acknowledged lost, nothing duplicated, each producer's
records in order, nothing a consumer read changed, and writes again within the goals (5 s after
the heal; for a leader, the ZooKeeper session timeout plus 2 s after the fault). The last test
stops the cluster, compares every ISR member's files with the final logs and prints the summary
table. The default suite runs one round of a seeded rotation of the cells (matrix.py prints the
seed); `make test-faults` runs them all. tests/fault/history/matrix.py says which cells a run covers
and how long; docs/testing.md tells the whole story.
"""

from __future__ import annotations

import pytest

from replog.devcluster import ClusterSpec, LocalCluster
from tests.fault.history import checker, matrix, verdict
from tests.fault.history.cells import CellResult, run_cell
from tests.fault.history.history import History
from tests.integration.broker_helpers import stop_brokers_first, zk_session

pytestmark = pytest.mark.fault

SESSION_MS = 3000
CELLS = matrix.chosen_cells("process")
RESULTS: list[CellResult] = []


@pytest.fixture(scope="module")
def matrix_cluster(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("fault-matrix"),
                           ClusterSpec(controllers=2, brokers=3, gateways=0, zookeeper_session_timeout_ms=SESSION_MS))
    try:
        cluster.up()
        with zk_session(cluster) as zk:
            yield cluster, zk
    finally:
        cluster.discard()


@pytest.mark.timeout(matrix.load_s() + 400)
@pytest.mark.parametrize("index, fault, kind", CELLS, ids=[matrix.cell_name(fault, kind) for _, fault, kind in CELLS])
def test_cell(matrix_cluster, index, fault, kind):
    cluster, zk = matrix_cluster
    history = History()
    dump_to = cluster.log_dir / f"history-{matrix.cell_name(fault, kind)}.jsonl"
    try:
        result = run_cell(cluster, zk, history, fault, kind, index, load_s=matrix.load_s(),
                          session_s=SESSION_MS / 1000)
    except BaseException:
        print(f"history: {history.dump(dump_to)}")
        raise
    RESULTS.append(result)
    verdict.judge_cell(cluster, result, fault, kind, history, dump_to)


def test_isr_members_hold_identical_logs_below_the_high_watermark(matrix_cluster, request):
    """Last: stop the cluster and read every ISR member's files with the broker's own log reader."""
    cluster, _ = matrix_cluster
    assert RESULTS, "no cell ran"
    stop_brokers_first(cluster)
    violations = verdict.replica_violations(cluster, RESULTS)
    with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        print(f"\nfault matrix: {matrix.describe_selection('process')}\n"
              f"{checker.format_table([r.row() for r in RESULTS])}")
    assert not violations, "\n".join(map(str, violations[:20]))
