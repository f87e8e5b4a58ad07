"""`replog elect-leaders`: the gateway's pre-checks, the request znode, and the outcome
after the controller has acted.

No controller runs (ClusterSpec(controllers=0)): a thread plays its part of the protocol
(gateway/elections.py): read the request, write the new partition states, delete the znode.
"""

from __future__ import annotations

import json
import threading
import time

import grpc
import pytest

from replog.cli.main import main
from replog.common.zk import schema
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2 as A
from replog.v1 import admin_pb2_grpc

from .gateway_helpers import cli_runner, kazoo_client, running_cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("cli-elections"), ClusterSpec(controllers=0, brokers=3, gateways=1))


@pytest.fixture(scope="module")
def kazoo(cluster):
    yield from kazoo_client(cluster)


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def set_states(kazoo, topic: str, states: dict[int, tuple[int, list[int]]]) -> None:
    for partition, (leader, isr) in states.items():
        path = schema.partition_state_path(topic, partition)
        data = schema.PartitionStateRecord(leader=leader, leader_epoch=1, isr=tuple(isr), controller_epoch=1).encode()
        if kazoo.exists(path):
            kazoo.set(path, data)
        else:
            kazoo.create(path, data, makepath=True)


def controller_elects(kazoo, path: str, leaders: dict[tuple[str, int], int], seen: list) -> threading.Thread:
    """Once the request appears: record what it asked, make the given leaders, delete it."""
    def run() -> None:
        deadline = time.monotonic() + 20
        while not kazoo.exists(path):
            assert time.monotonic() < deadline, f"{path} never appeared"
            time.sleep(0.02)
        request = schema.ElectionRequest.decode(kazoo.get(path)[0], path)
        seen.extend(request.partitions)
        for (topic, partition), leader in leaders.items():
            if (topic, partition) in request.partitions:
                state = schema.PartitionStateRecord.decode(kazoo.get(schema.partition_state_path(topic, partition))[0])
                set_states(kazoo, topic, {partition: (leader, list(state.isr))})
        kazoo.delete(path)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def lead(replog_module, kazoo):
    assert replog_module("topics", "create", "lead", "--replica-assignment", "1:2,2:3,3:1,1:3") == 0
    set_states(kazoo, "lead", {
        0: (1, [1, 2]),   # the preferred replica leads: not needed
        1: (3, [3, 2]),   # preferred 2 is in the ISR: eligible
        2: (1, [1]),      # preferred 3 is out of the ISR: not available
        3: (3, [3, 1]),   # preferred 1 is in the ISR: eligible
    })
    return "lead"


@pytest.fixture(scope="module")
def replog_module(cluster):
    def run(*argv: str) -> int:
        return main(["--gateway", cluster.gateway_address, *argv])
    return run


def test_preferred_election_not_needed_is_answered_without_the_controller(replog, kazoo, lead):
    code, out, err = replog("elect-leaders", "--preferred", "--topic", "lead", "--partition", "0")
    assert code == 0, err
    assert out.splitlines()[0] == "Preferred election: 0 elected, 1 not needed, 0 failed."
    assert out.splitlines()[2].split()[:3] == ["lead", "0", "ELECTION_NOT_NEEDED"]
    assert not kazoo.exists(schema.PREFERRED_REPLICA_ELECTION)


def test_preferred_election_asks_only_for_eligible_partitions(replog, kazoo, lead, tmp_path):
    request = tmp_path / "election.json"
    request.write_text(json.dumps({"partitions": [
        {"topic": "lead", "partition": 1}, {"topic": "lead", "partition": 2}, {"topic": "lead", "partition": 9}]}))
    seen: list = []
    thread = controller_elects(kazoo, schema.PREFERRED_REPLICA_ELECTION, {("lead", 1): 2}, seen)
    code, out, err = replog("-o", "json", "elect-leaders", "--preferred", "--path-to-json-file", str(request),
                            "--timeout-ms", "10000")
    thread.join()
    assert seen == [("lead", 1)]
    assert code == 1      # some partitions could not be elected
    results = {(r["topic"], r["partition"]): r for r in json.loads(out)["partitions"]}
    assert results[("lead", 1)]["result"] == "NONE"
    assert results[("lead", 2)]["result"] == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert "preferred replica 3 is not in the ISR [1]" in results[("lead", 2)]["message"]
    assert results[("lead", 9)]["result"] == "UNKNOWN_TOPIC_OR_PARTITION"


def test_without_a_controller_the_request_times_out_and_blocks_the_next(cluster, replog, kazoo, lead):
    code, out, err = replog("-o", "json", "elect-leaders", "--preferred", "--all", "--timeout-ms", "300")
    assert code == 1
    results = {(r["topic"], r["partition"]): r["result"] for r in json.loads(out)["partitions"]}
    assert results[("lead", 3)] == "REQUEST_TIMED_OUT"
    assert results[("lead", 1)] == "ELECTION_NOT_NEEDED"     # elected in the previous test
    queued = schema.ElectionRequest.decode(kazoo.get(schema.PREFERRED_REPLICA_ELECTION)[0])
    assert ("lead", 3) in queued.partitions

    with cluster.channel(cluster.gateway_address) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            admin_pb2_grpc.AdminServiceStub(channel).ElectLeaders(A.ElectLeadersRequest(
                election_type=A.ELECTION_TYPE_PREFERRED, all=True, timeout_ms=100), timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "An election is already in progress" in refused.value.details()
    code, _, err = replog("elect-leaders", "--preferred", "--all")
    assert code == 1 and "already in progress" in err and err.count("\n") == 1
    kazoo.delete(schema.PREFERRED_REPLICA_ELECTION)


def test_unclean_election_only_for_offline_partitions_with_a_live_replica(replog, kazoo):
    assert replog("topics", "create", "dark", "--replica-assignment", "1:2,2:3,3:1")[0] == 0
    set_states(kazoo, "dark", {0: (-1, [1]), 1: (2, [2, 3]), 2: (-1, [3])})
    seen: list = []
    thread = controller_elects(kazoo, schema.UNCLEAN_LEADER_ELECTION, {("dark", 0): 2, ("dark", 2): 1}, seen)
    code, out, err = replog("-o", "json", "elect-leaders", "--unclean", "--all", "--timeout-ms", "10000")
    thread.join()
    assert code == 0, err
    assert sorted(seen) == [("dark", 0), ("dark", 2)]
    results = {(r["topic"], r["partition"]): r["result"] for r in json.loads(out)["partitions"]}
    assert results[("dark", 0)] == results[("dark", 2)] == "NONE"
    assert results[("dark", 1)] == "ELECTION_NOT_NEEDED"
    assert not kazoo.exists(schema.UNCLEAN_LEADER_ELECTION)


def test_election_usage_errors_exit_2(replog):
    assert replog("elect-leaders", "--all")[0] == 2                              # no type
    assert replog("elect-leaders", "--preferred")[0] == 2                        # no partitions
    assert replog("elect-leaders", "--preferred", "--unclean", "--all")[0] == 2
    assert replog("elect-leaders", "--preferred", "--topic", "lead")[0] == 2     # no --partition
