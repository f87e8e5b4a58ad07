"""`replog topics ...` and `replog cluster ...` against a real cluster: table and JSON output,
the four health filters, exit codes and one-line errors.

No controller runs (ClusterSpec(controllers=0)); where a test needs leaders and ISRs it
plays the controller by writing the partition state znodes itself.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from replog.cli.main import main
from replog.common.zk import schema
from replog.devcluster import ClusterSpec

from .gateway_helpers import kazoo_client, running_cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("cli-topics"), ClusterSpec(controllers=0, brokers=3, gateways=1))


@pytest.fixture(scope="module")
def kazoo(cluster):
    yield from kazoo_client(cluster)


@pytest.fixture
def replog(cluster, capsys):
    """Run the CLI in this process (same code as the installed `replog`): (exit code, stdout, stderr)."""
    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(["--gateway", cluster.gateway_address, *argv])
        except SystemExit as exc:   # argparse usage errors
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


def play_controller(kazoo, topic: str, states: dict[int, tuple[int, list[int]]]) -> None:
    """Write partition states as the controller would (it is not running in these tests)."""
    for partition, (leader, isr) in states.items():
        path = schema.partition_state_path(topic, partition)
        data = schema.PartitionStateRecord(leader=leader, leader_epoch=1, isr=tuple(isr), controller_epoch=1).encode()
        if kazoo.exists(path):
            kazoo.set(path, data)
        else:
            kazoo.create(path, data, makepath=True)


def table_rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("TOPIC"))
    return [line.split() for line in lines[header + 1:]]


def test_create_list_describe_alter_grow_delete(replog, kazoo):
    code, out, err = replog("topics", "create", "orders", "--partitions", "3", "--replication-factor", "2",
                            "--config", "min.insync.replicas=2", "--start-index", "0", "--replica-shift", "0")
    assert code == 0, err
    assert out.splitlines()[0] == "Created topic 'orders' with 3 partition(s):"
    assert out.splitlines()[1].split() == ["PARTITION", "REPLICAS"]
    assert [line.split() for line in out.splitlines()[2:]] == [["0", "1,2"], ["1", "2,3"], ["2", "3,1"]]

    code, out, _ = replog("topics", "list")
    assert code == 0 and "orders" in out.splitlines()

    code, out, _ = replog("topics", "describe", "orders")
    assert code == 0
    header = out.splitlines()[0]
    assert header.startswith("Topic: orders  PartitionCount: 3  ReplicationFactor: 2  Configs: ")
    assert "min.insync.replicas=2" in header
    assert out.splitlines()[1].split() == ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "ELR",
                                           "OFFLINE", "ADDING", "REMOVING", "STATUS", "LOG-START", "HW", "SIZE"]
    # No controller has created the states yet: offline, empty ISR.
    assert table_rows(out)[0] == ["orders", "0", "none", "-1", "1,2", "-", "-", "-", "-", "-",
                                  "unavailable,under-replicated,under-min-isr", "?", "?", "?"]

    play_controller(kazoo, "orders", {0: (1, [1, 2]), 1: (2, [2, 3]), 2: (3, [3, 1])})
    code, out, _ = replog("--output", "json", "topics", "describe", "orders")
    described = json.loads(out)["topics"][0]
    assert described["configs"]["min.insync.replicas"] == "2" and described["deleting"] is False
    assert described["partitions"][0] == {
        "topic": "orders", "partition": 0, "leader": 1, "leader_epoch": 1, "replicas": [1, 2], "isr": [1, 2],
        "elr": [], "adding_replicas": [], "removing_replicas": [], "offline_replicas": [], "unavailable": False,
        "under_replicated": False, "under_min_isr": False, "at_min_isr": True, "unclean_leader": False,
        "log_start_offset": -1, "high_watermark": -1, "size_bytes": -1,  # no broker runs in this test
    }

    code, out, _ = replog("topics", "alter", "orders", "--config", "retention.ms=60000",
                          "--delete-config", "min.insync.replicas", "-o", "json")
    assert code == 0
    configs = json.loads(out)["configs"]
    assert configs["retention.ms"] == "60000" and configs["min.insync.replicas"] == "1"

    code, out, _ = replog("topics", "add-partitions", "orders", "--partitions", "5")
    assert code == 0 and out.splitlines()[0] == "Added 2 partition(s) to topic 'orders' (now 5):"
    code, out, _ = replog("topics", "add-partitions", "orders", "--partitions", "6", "--replica-assignment", "3:1")
    assert code == 0 and [line.split() for line in out.splitlines()[2:]] == [["5", "3,1"]]
    assert sorted(schema.TopicAssignment.decode("orders", kazoo.get("/brokers/topics/orders")[0]).partitions) == \
        list(range(6))

    code, out, _ = replog("topics", "delete", "orders")
    assert code == 0 and "marked for deletion" in out
    assert replog("topics", "list")[1].split() == []
    code, out, _ = replog("-o", "json", "topics", "list", "--include-deleting")
    assert json.loads(out) == {"topics": ["orders"]}


def test_create_with_explicit_assignment_and_validate_only_json(replog):
    code, out, err = replog("-o", "json", "topics", "create", "planned", "--replica-assignment", "1:2,2:3,3:1",
                            "--validate-only")
    assert code == 0, err
    data = json.loads(out)
    assert data["created"] is False
    assert data["assignment"] == [{"partition": 0, "replicas": [1, 2]}, {"partition": 1, "replicas": [2, 3]},
                                  {"partition": 2, "replicas": [3, 1]}]
    assert "planned" not in replog("topics", "list")[1].split()


def test_health_filters_mean_what_kafka_topics_flags_mean(replog, kazoo):
    code, _, err = replog("topics", "create", "health", "--replica-assignment", "1:2:3,2:3:1,3:1:2,1:3:2",
                          "--config", "min.insync.replicas=2")
    assert code == 0, err
    play_controller(kazoo, "health", {
        0: (1, [1, 2, 3]),   # healthy
        1: (2, [2, 3]),      # under-replicated, at min ISR
        2: (3, [3]),         # under-replicated, under min ISR
        3: (-1, [3]),        # offline: unavailable (and under min ISR, as in Kafka)
    })

    def partitions(flag: str) -> list[int]:
        code, out, err = replog("-o", "json", "topics", "describe", "health", flag)
        assert code == 0, err
        topics = json.loads(out)["topics"]
        return [p["partition"] for p in topics[0]["partitions"]] if topics else []

    assert partitions("--under-replicated-partitions") == [1, 2, 3]
    assert partitions("--unavailable-partitions") == [3]
    assert partitions("--under-min-isr-partitions") == [2, 3]
    assert partitions("--at-min-isr-partitions") == [1]

    code, out, _ = replog("topics", "describe", "health", "--unavailable-partitions")
    assert code == 0 and not out.startswith("Topic:")      # filtered views list partitions only, as kafka-topics
    assert table_rows(out) == [["health", "3", "none", "1", "1,3,2", "3", "-", "-", "-", "-",
                                "unavailable,under-replicated,under-min-isr", "?", "?", "?"]]
    code, _, err = replog("topics", "describe", "--unavailable-partitions", "--under-replicated-partitions")
    assert code == 2 and "not allowed with argument" in err


def test_cluster_describe_lists_live_brokers_and_the_missing_controller(replog):
    code, out, _ = replog("cluster", "describe")
    assert code == 0
    assert out.splitlines()[0] == "No active controller; 3 broker(s)"
    assert out.splitlines()[1].split() == ["BROKER", "ENDPOINT", "RACK", "ALIVE", "LOG", "DIRS"]
    code, out, _ = replog("-o", "json", "cluster", "status")
    data = json.loads(out)
    assert data["controller_id"] == -1
    assert [(b["broker_id"], b["alive"], b["health"]) for b in data["brokers"]] == [
        (1, True, "SERVING"), (2, True, "SERVING"), (3, True, "SERVING")]
    assert all([d["offline"] for d in b["log_dirs"]] == [False] for b in data["brokers"])


@pytest.mark.parametrize("argv, message", [
    (["topics", "create", "bad/name", "--partitions", "1", "--replication-factor", "1"],
     "Topic name 'bad/name' is illegal"),
    (["topics", "create", "t", "--partitions", "1", "--replication-factor", "5"],
     "Replication factor: 5 larger than available brokers: 3. (FAILED_PRECONDITION)"),
    (["topics", "describe", "missing"], "Unknown topic: 'missing'. (NOT_FOUND)"),
    (["topics", "alter", "health", "--config", "retention.ms=soon"], "'soon'"),
    (["topics", "delete", "missing"], "Topic 'missing' does not exist. (NOT_FOUND)"),
])
def test_refusals_are_one_line_on_stderr_with_exit_1(replog, argv, message):
    code, out, err = replog(*argv)
    assert code == 1 and out == ""
    assert err.startswith("replog: error: ") and err.count("\n") == 1 and message in err, err


def test_usage_errors_exit_2(replog):
    assert replog("topics", "create", "t")[0] == 2                       # neither counts nor an assignment
    assert replog("topics", "create", "t", "--replica-assignment", "1:x")[0] == 2
    assert replog("topics", "alter", "t")[0] == 2


def test_the_installed_command_never_prints_a_traceback(cluster, venv_bin):
    result = subprocess.run(
        [str(venv_bin / "replog"), "--gateway", cluster.gateway_address, "topics", "create", "x",
         "--partitions", "1", "--replication-factor", "1", "--config", "min.insync.replicas=lots"],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "'lots'" in result.stderr
