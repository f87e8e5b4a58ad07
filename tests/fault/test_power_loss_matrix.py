"""Power loss under the fault matrix's workload and history checker (issue 40; history/power_loss.py).

Each cell is a policy and a target on a fresh cluster whose disks forget what was not fsynced: the
durable mode (`flush.messages=1`) or the default, and the power of one broker, of every broker, or of
every broker and the ZooKeeper server.

- Durable mode: nothing acknowledged is lost, nothing a consumer read changes, and no broker reports a
  loss, whoever loses power.
- Default policy, one broker: the cluster loses nothing (the broker reports its own loss and fetches the
  records again).
- Default policy, every broker: the loss is never silent. No replica holds every committed record, so
  every partition stays offline until the operator asks for an unclean election (`replog elect-leaders
  --unclean --all`). Then, for each partition, the checker's count of lost acknowledged records equals
  the count its new leader reported (log line and metric), the controller counts a lossy election, and
  `replog topics describe` flags the partition's leader as unclean.

The default suite runs one cell, picked by a seeded rotation; `make test-faults` runs all six.
"""

from __future__ import annotations

import json

import pytest

from replog.devcluster import ClusterSpec
from tests.fault.history import matrix
from tests.fault.history.history import History
from tests.fault.history.power_loss import PARTITIONS, reported_losses, run_power_loss_cell
from tests.fault.test_eligible_leader_replicas import replog
from tests.fault.test_power_loss import SPEC, lose_power, metric, on_powerloss_disks
from tests.integration.broker_helpers import partition_state, wait_for, zk_session

pytestmark = pytest.mark.fault

CELLS = matrix.chosen_cells("powerloss")
ALLOWED_AFTER_LOSS = {"lost", "changed_after_read", "client_error"}  # a consumer past the new log end is told


def offline_until_an_unclean_election(cluster, zk, topic: str) -> None:
    """Every partition offline once the brokers are back (none holds every committed record), shown so by
    describe; then the operator's explicit unclean election."""
    wait_for(lambda: all(partition_state(zk, topic, p).leader == -1 for p in range(PARTITIONS)), 60,
             f"every partition of {topic} offline after the power loss")
    (shown,) = json.loads(replog(cluster, "topics", "describe", topic, "-o", "json"))["topics"]
    assert all(p["unavailable"] for p in shown["partitions"]), shown
    replog(cluster, "elect-leaders", "--unclean", "--all")


@pytest.mark.timeout(matrix.load_s() + 400)
@pytest.mark.parametrize("index, fault, target", CELLS, ids=[matrix.cell_name(f, t) for _, f, t in CELLS])
def test_power_loss_cell(cluster_factory, tmp_path, index, fault, target):
    policy = fault.removeprefix("power-loss-")
    history = History()
    # Built here, not replaced from SPEC: a spec takes the session's CA when it is made (the workload's
    # clients trust that one), and SPEC was made at import.
    spec = ClusterSpec(controllers=1, gateways=1, zookeeper_session_timeout_ms=SPEC.zookeeper_session_timeout_ms,
                       zookeeper_force_sync=True, extra_args=SPEC.extra_args)
    cluster = cluster_factory(spec, start=False)
    with on_powerloss_disks(cluster, tmp_path / "backing") as (cluster, disks), zk_session(cluster) as zk:
        dump_to = cluster.log_dir / f"history-{matrix.cell_name(fault, target)}.jsonl"
        try:
            lossy = policy == "default" and target != "one-broker"
            result = run_power_loss_cell(cluster, zk, disks, history, policy, target, index,
                                         load_s=matrix.load_s(), lose_power=lose_power,
                                         after_power_loss=offline_until_an_unclean_election if lossy else None)
        except BaseException:
            print(f"history: {history.dump(dump_to)}")
            raise
        report, topic = result.report, result.topic
        reported = {b: reported_losses(cluster.log_path(f"broker-{b}").read_text(), topic) for b in (1, 2, 3)}
        print(f"\n{matrix.describe_selection('powerloss')}: {fault} of {result.targets}: "
              f"{report.acknowledged} acknowledged, {report.count('lost')} lost; brokers reported {reported}")
        assert report.acknowledged > 0
        if policy == "durable" or target == "one-broker":
            assert not report.violations, f"history: {history.dump(dump_to)}\n" + "\n".join(
                map(str, report.violations[:20]))
        if policy == "durable":
            assert reported == {1: {}, 2: {}, 3: {}}, "a durable replica lost committed records"
            return
        if target == "one-broker":
            (name,) = result.targets
            assert reported[int(name.removeprefix("broker-"))], "the broker that lost power reported nothing"
            return
        unexpected = [v for v in report.violations if v.rule not in ALLOWED_AFTER_LOSS]
        assert not unexpected, "\n".join(map(str, unexpected[:20]))
        lost = {p: 0 for p in result.leaders}
        for violation in report.violations:
            if violation.rule == "lost":
                lost[violation.partition] += 1
        assert sum(lost.values()) > 0, "nothing was fsynced, yet no acknowledged record was lost"
        assert {p: reported[leader].get(p, 0) for p, leader in result.leaders.items()} == lost, \
            "the checker's count of lost records differs from what each partition's new leader reported"
        for broker_id in (1, 2, 3):
            assert metric(cluster, broker_id, "replog_broker_recovery_lost_records_total") == \
                sum(reported[broker_id].values())
        assert metric(cluster, 1, "replog_controller_lossy_leader_elections_total", "controller") >= 1
        (shown,) = json.loads(replog(cluster, "topics", "describe", topic, "-o", "json"))["topics"]
        flagged = {p["partition"] for p in shown["partitions"] if p["unclean_leader"]}
        assert flagged == {p for p, count in lost.items() if count}, shown
