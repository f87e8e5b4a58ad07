"""The network and ZooKeeper cells of the fault matrix (issue 39, sections 3 and 4) on a multi-host cluster.

One secure cluster for the module: a 3-server ZooKeeper ensemble, 2 controllers and 3 brokers, each on a
host of its own (a network namespace, its own address; mutual TLS and ZooKeeper authentication). Each cell
runs the process matrix's workload and checker (tests/fault/history/cells.py): three idempotent acks=all
producers and two consumers over fresh topics, a fault from network_faults.py into its target, the heal,
a settle that requires every process healthy and every ISR full (the check that the cluster is sound
before the next cell), then the history checked against the final logs. Unclean election is off: nothing
acknowledged lost, nothing duplicated, nothing read changed. The default suite runs one round of a seeded
rotation of the cells (matrix.py prints the seed); `make test-faults` runs them all. The last test compares
every ISR member's files with the final logs and prints the summary table, with the pairs skipped by design.
"""

from __future__ import annotations

import pytest

from replog.devcluster import ClusterSpec
from tests.conftest import ClusterFactory
from tests.fault.history import checker, matrix, verdict
from tests.fault.history.cells import CellResult, run_cell
from tests.fault.history.history import History
from tests.fault.history.network_faults import NOT_APPLICABLE
from tests.integration.broker_helpers import stop_brokers_first, zk_session

pytestmark = pytest.mark.fault

SESSION_MS = 4000
LAG_MS = 2000
CELLS = matrix.chosen_cells("network")
RESULTS: list[CellResult] = []


@pytest.fixture(scope="module")
def network_cluster(tmp_path_factory):
    print(f"\nnetwork fault matrix: {matrix.describe_selection('network')}")
    factory = ClusterFactory(tmp_path_factory.mktemp("fault-matrix-network"))
    try:
        cluster = factory(ClusterSpec(hosts=True, zookeeper_servers=3, controllers=2, brokers=3, gateways=0,
                                      zookeeper_session_timeout_ms=SESSION_MS,
                                      extra_args={"broker": ["--replica-lag-time-max-ms", str(LAG_MS)]}))
        with zk_session(cluster) as zk:
            yield cluster, zk
    finally:
        factory.teardown()


@pytest.mark.timeout(matrix.load_s() + 400)
@pytest.mark.parametrize("index, fault, kind", CELLS, ids=[matrix.cell_name(fault, kind) for _, fault, kind in CELLS])
def test_cell(network_cluster, index, fault, kind):
    cluster, zk = network_cluster
    history = History()
    dump_to = cluster.log_dir / f"history-{matrix.cell_name(fault, kind)}.jsonl"
    try:
        result = run_cell(cluster, zk, history, fault, kind, index, load_s=matrix.load_s(),
                          session_s=SESSION_MS / 1000, lag_s=LAG_MS / 1000)
    except BaseException:
        print(f"history: {history.dump(dump_to)}")
        raise
    RESULTS.append(result)
    verdict.judge_cell(cluster, result, fault, kind, history, dump_to)


def test_isr_members_hold_identical_logs_below_the_high_watermark(network_cluster, request):
    """Last: stop the cluster and read every ISR member's files with the broker's own log reader."""
    cluster, _ = network_cluster
    assert RESULTS, "no cell ran"
    stop_brokers_first(cluster)
    violations = verdict.replica_violations(cluster, RESULTS)
    skipped = [(fault, f"{kind} -- {reason}", *["-"] * 5) for (fault, kind), reason in NOT_APPLICABLE.items()]
    with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        print(f"\nnetwork fault matrix: {matrix.describe_selection('network')}\n"
              f"{checker.format_table([r.row() for r in RESULTS] + skipped)}")
    assert not violations, "\n".join(map(str, violations[:20]))
