"""`replog reassign generate|execute|verify|cancel|list` and the reassignment JSON round trip.

No controller runs (ClusterSpec(controllers=0)): the tests play its part of the protocol
(core/reassignments.py in the gateway) by hand: record adding/removing replicas in
/brokers/topics/<topic>, then store the targets and delete /admin/reassign_partitions.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from replog.cli import reassign as reassign_cli
from replog.common.zk import schema
from replog.devcluster import ClusterSpec

from .gateway_helpers import cli_runner, kazoo_client, running_cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("cli-reassign"), ClusterSpec(controllers=0, brokers=3, gateways=1))


@pytest.fixture(scope="module")
def kazoo(cluster):
    yield from kazoo_client(cluster)


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def assignment_of(kazoo, topic: str) -> schema.TopicAssignment:
    return schema.TopicAssignment.decode(topic, kazoo.get(schema.topic_path(topic))[0])


def pending(kazoo) -> dict:
    found = kazoo.exists(schema.REASSIGN_PARTITIONS)
    return dict(schema.ReassignmentRequest.decode(kazoo.get(schema.REASSIGN_PARTITIONS)[0]).targets) if found else {}


def controller_starts(kazoo, topic: str) -> None:
    """KIP-455 midway: assigned = target + original, with adding / removing recorded."""
    current = assignment_of(kazoo, topic)
    partitions, adding, removing = dict(current.partitions), {}, {}
    for (t, p), target in pending(kazoo).items():
        if t == topic and target:
            original = current.partitions[p]
            partitions[p] = tuple(target) + tuple(r for r in original if r not in target)
            adding[p] = tuple(r for r in target if r not in original)
            removing[p] = tuple(r for r in original if r not in target)
    kazoo.set(schema.topic_path(topic), schema.TopicAssignment(partitions, adding, removing).encode())


def controller_finishes(kazoo) -> None:
    """Store every target (a cancel restores the original replicas) and clear the request."""
    by_topic: dict[str, dict] = {}
    for (t, p), target in pending(kazoo).items():
        by_topic.setdefault(t, {})[p] = target
    for topic, targets in by_topic.items():
        current = assignment_of(kazoo, topic)
        partitions = dict(current.partitions)
        for p, target in targets.items():
            adding = set(current.adding_replicas.get(p, ()))
            partitions[p] = tuple(target) if target else tuple(r for r in partitions[p] if r not in adding)
        kazoo.set(schema.topic_path(topic), schema.TopicAssignment(partitions).encode())
    kazoo.delete(schema.REASSIGN_PARTITIONS)


def test_generate_execute_verify_round_trip(replog, kazoo, tmp_path, monkeypatch):
    assert replog("topics", "create", "moves", "--replica-assignment", "1:2,2:3,3:1")[0] == 0
    plan, rollback = tmp_path / "plan.json", tmp_path / "rollback.json"

    code, out, err = replog("reassign", "generate", "--topics", "moves", "--broker-list", "1,2",
                            "--proposed-out", str(plan))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1])["partitions"][0] == {"topic": "moves", "partition": 0, "replicas": [1, 2],
                                                     "log_dirs": ["any", "any"]}
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(plan.read_text())
    assert proposed == json.loads(lines[4]) and proposed["version"] == 1
    assert [sorted(p["replicas"]) for p in proposed["partitions"]] == [[1, 2]] * 3

    code, out, err = replog("reassign", "execute", "--reassignment-json-file", str(plan),
                            "--rollback-out", str(rollback), "--throttle", "1048576")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    original = [(p["topic"], p["partition"], p["replicas"]) for p in json.loads(lines[2])["partitions"]]
    assert original == [("moves", 0, [1, 2]), ("moves", 1, [2, 3]), ("moves", 2, [3, 1])]
    assert json.loads(rollback.read_text()) == json.loads(lines[2])
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert "Successfully started partition reassignments for moves-0,moves-1,moves-2" in out
    assert pending(kazoo) == {("moves", p["partition"]): tuple(p["replicas"]) for p in proposed["partitions"]}
    assert schema.ReassignmentThrottle.decode(kazoo.get(schema.REASSIGNMENT_THROTTLE)[0]).bytes_per_s == 1048576

    code, out, _ = replog("-o", "json", "reassign", "verify", "--reassignment-json-file", str(plan))
    assert code == 0
    verified = json.loads(out)
    assert verified["complete"] is False
    assert {p["status"] for p in verified["partitions"]} == {"in progress"}
    # No leader answers DescribeReplicas yet: the lag is unknown, never an error.
    assert {p["bytes_behind"] for p in verified["partitions"]} == {-1}

    controller_starts(kazoo, "moves")
    code, out, _ = replog("topics", "describe", "moves")
    # Partition 1 moves from [2, 3] to a target on brokers 1 and 2: while it runs, assigned is
    # target + original, broker 1 is being added and broker 3 removed.
    target = next(p["replicas"] for p in proposed["partitions"] if p["partition"] == 1)
    row = next(r.split() for r in out.splitlines() if r.split()[:2] == ["moves", "1"])
    assert row[4] == ",".join(map(str, target + [3])) and row[8:10] == ["1", "3"]
    code, out, _ = replog("-o", "json", "reassign", "list")
    listed = json.loads(out)
    assert listed["throttle_bytes_per_s"] == 1048576
    assert [(p["partition"], p["adding_replicas"]) for p in listed["partitions"]][1] == (1, [1])

    assert kazoo.exists(schema.REASSIGNMENT_THROTTLE)  # still moving: the throttle stays
    controller_finishes(kazoo)
    code, out, _ = replog("reassign", "verify", "--reassignment-json-file", str(plan))
    assert code == 0 and out.splitlines()[0] == "Reassignment complete: 3 of 3 partition(s) done, 0 in progress, 0 failed."
    # Nothing moves any more: verify lifts the throttle (as kafka-reassign-partitions --verify does).
    assert out.splitlines()[1] == "The reassignment throttle was removed."
    assert not kazoo.exists(schema.REASSIGNMENT_THROTTLE)
    code, out, _ = replog("reassign", "verify", "--reassignment-json-file", str(plan))
    assert code == 0 and "throttle" not in out
    assert {tuple(r) for r in assignment_of(kazoo, "moves").partitions.values()} == \
        {tuple(p["replicas"]) for p in proposed["partitions"]}

    # Rolling back with --watch: a progress bar on stderr until the controller is done. The
    # controller moves on only after the watch has polled: it sees the plan pending, then moving.
    polls = []
    original_rows = reassign_cli._progress_rows
    monkeypatch.setattr(reassign_cli, "_progress_rows", lambda reply: polls.append(reply) or original_rows(reply))

    def controller() -> None:
        deadline = time.monotonic() + 20
        while len(polls) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        controller_starts(kazoo, "moves")
        seen = len(polls)
        while len(polls) <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        controller_finishes(kazoo)

    thread = threading.Thread(target=controller)
    thread.start()
    code, out, err = replog("reassign", "execute", "--reassignment-json-file", str(rollback), "--watch",
                            "--watch-interval-ms", "100")
    thread.join()
    assert code == 0, err
    assert "reassigning" in err and "3/3" in err
    assert dict(assignment_of(kazoo, "moves").partitions) == {0: (1, 2), 1: (2, 3), 2: (3, 1)}


def test_cancel_then_verify_reports_failed(replog, kazoo, tmp_path):
    assert replog("topics", "create", "undo", "--replica-assignment", "1:2,2:3")[0] == 0
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "undo", "partition": 0, "replicas": [3, 1]}, {"topic": "undo", "partition": 1, "replicas": [1, 3]}]}))
    assert replog("reassign", "execute", "--reassignment-json-file", str(plan))[0] == 0
    controller_starts(kazoo, "undo")

    code, out, err = replog("reassign", "cancel", "--topic", "undo", "--partition", "0")
    assert code == 0, err
    assert out.strip() == "Cancelled the reassignment of undo-0; the controller restores their original replicas."
    assert pending(kazoo)[("undo", 0)] == ()
    code, out, _ = replog("-o", "json", "reassign", "cancel", "--all")
    # undo-0 is still heading back (its added replica is still assigned), so --all names it again.
    assert json.loads(out) == {"cancelled": ["undo-0", "undo-1"]}

    controller_finishes(kazoo)
    code, out, err = replog("reassign", "verify", "--reassignment-json-file", str(plan))
    assert code == 1
    assert "0 of 2 partition(s) done, 0 in progress, 2 failed" in out
    # The original replicas are back (as in Kafka, their order is the one of the full set
    # assigned during the move: target + original, minus the replicas being added).
    assert {p: set(r) for p, r in assignment_of(kazoo, "undo").partitions.items()} == {0: {1, 2}, 1: {2, 3}}
    code, out, err = replog("reassign", "cancel", "--all")
    assert code == 1 and "No reassignment is in progress. (FAILED_PRECONDITION)" in err


@pytest.mark.parametrize("partitions, message", [
    ([{"topic": "bad", "partition": 0, "replicas": [1]}, {"topic": "bad", "partition": 0, "replicas": [2]}],
     "Partition bad-0 is listed twice in the plan. (INVALID_ARGUMENT)"),
    ([{"topic": "bad", "partition": 0, "replicas": [2, 2]}], "Broker 2 is listed twice in the replicas [2, 2] of bad-0"),
    ([{"topic": "bad", "partition": 0, "replicas": [2, 77]}], "Unknown broker 77 in the replicas of bad-0"),
    ([{"topic": "bad", "partition": 3, "replicas": [2]}], "Partition bad-3 in the plan does not exist"),
])
def test_invalid_plans_are_refused_before_anything_is_written(replog, kazoo, tmp_path, partitions, message):
    if not kazoo.exists(schema.topic_path("bad")):
        assert replog("topics", "create", "bad", "--replica-assignment", "1")[0] == 0
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": partitions}))
    before = pending(kazoo)
    code, out, err = replog("reassign", "execute", "--reassignment-json-file", str(plan))
    assert code == 1 and message in err and err.count("\n") == 1
    assert pending(kazoo) == before


def test_a_malformed_plan_file_is_a_one_line_error(replog, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text('{"version": 1, "partitions": [{"topic": "x"}]}')
    code, _, err = replog("reassign", "verify", "--reassignment-json-file", str(plan))
    assert code == 1 and err.strip() == f"replog: error: {plan}: partitions[0] needs an integer 'partition'"
