"""The offsets topic and partition growth with real processes (issue 43).

A cluster that has no `__consumer_offsets` gets one on its first FindCoordinator: the answer is
COORDINATOR_NOT_AVAILABLE until the topic has leaders, then a group consumes and commits. The topic
has the configured partition count and a replication factor capped at the live brokers; clients
cannot produce to it, and `replog topics list` shows it only with --include-internal.

A group whose topic gains partitions (`replog topics add-partitions`) rebalances: the leader
notices through metadata, and the records written to the new partitions get consumed."""

from __future__ import annotations

import json
import threading

import grpc
import pytest

from replog.client import GroupConsumer, Producer
from replog.common.core.partitions import TopicPartition
from replog.devcluster.spec import ClusterSpec
from replog.v1 import common_pb2, group_pb2, group_pb2_grpc, log_pb2, log_pb2_grpc

from .gateway_helpers import cli_runner
from .group_helpers import GroupMember
from .group_helpers import until as wait_until

pytestmark = pytest.mark.integration

OFFSETS = "__consumer_offsets"
OFFSETS_PARTITIONS = 4
TOPIC = "orders"
DEADLINE_S = 90.0
SESSION_MS = 6000
MEMBER_SETTINGS = {"session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": 1000, "max_wait_ms": 200,
                   "metadata_max_age_ms": 1000}
E = common_pb2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    # A replication factor above the three brokers: the broker caps it rather than failing.
    spec = ClusterSpec(extra_args={"broker": ["--offsets-topic-num-partitions", str(OFFSETS_PARTITIONS),
                                              "--offsets-topic-replication-factor", "5"]})
    factory = ClusterFactory(tmp_path_factory.mktemp("offsets-topic"))
    yield factory(spec)
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def until(check, what: str, deadline_s: float = DEADLINE_S):
    return wait_until(check, what, deadline_s)


def brokers(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def find_coordinator(cluster, group_id: str):
    try:
        return group_pb2_grpc.GroupServiceStub(cluster.channel(brokers(cluster)[0])).FindCoordinator(
            group_pb2.FindCoordinatorRequest(group_id=group_id), timeout=10)
    except grpc.RpcError:
        return None


def send(bootstrap: list[str], topic: str, partitions: range, per_partition: int) -> None:
    with Producer(bootstrap) as producer:
        for partition in partitions:
            producer.send_batch(topic, [f"{partition}-{i}".encode() for i in range(per_partition)],
                                partition=partition)
        producer.flush(30)


def test_the_first_find_coordinator_creates_the_internal_offsets_topic(cluster, replog):
    code, _, err = replog("topics", "create", TOPIC, "--partitions", "2", "--replication-factor", "3")
    assert code == 0, err
    code, out, err = replog("topics", "list", "-o", "json")
    assert code == 0 and OFFSETS not in json.loads(out)["topics"], (out, err)

    first = find_coordinator(cluster, "first")
    assert first is not None and first.error_code == E.ERROR_CODE_COORDINATOR_NOT_AVAILABLE, first
    assert OFFSETS in first.error_message and "retry" in first.error_message, first.error_message
    found = until(lambda: (a := find_coordinator(cluster, "first")) and a.error_code == E.ERROR_CODE_NONE and a,
                  "FindCoordinator to name a coordinator once the offsets topic has leaders")
    assert 0 <= found.offsets_partition < OFFSETS_PARTITIONS

    code, out, err = replog("topics", "describe", OFFSETS, "-o", "json")
    assert code == 0, err
    described = json.loads(out)["topics"][0]
    assert len(described["partitions"]) == OFFSETS_PARTITIONS
    assert all(len(p["replicas"]) == 3 for p in described["partitions"]), described["partitions"]
    assert described["configs"].get("retention.ms") == "-1", described["configs"]

    code, out, err = replog("topics", "list", "-o", "json")
    assert code == 0 and OFFSETS not in json.loads(out)["topics"] and TOPIC in json.loads(out)["topics"], out
    code, out, err = replog("topics", "list", "--include-internal", "-o", "json")
    assert code == 0 and OFFSETS in json.loads(out)["topics"], (out, err)

    # A group works on the created topic: it consumes and commits.
    bootstrap = brokers(cluster)
    send(bootstrap, TOPIC, range(2), 5)
    with GroupConsumer(bootstrap, TOPIC, group_id="first", auto_offset_reset="earliest", enable_auto_commit=False,
                       session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000, max_wait_ms=200) as consumer:
        seen: list = []
        until(lambda: seen.extend(consumer.poll(200)) or len(seen) >= 10, "the group to read the 10 records")
        consumer.commit()
        assert consumer.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]) == {
            TopicPartition(TOPIC, 0): 5, TopicPartition(TOPIC, 1): 5}


def test_clients_cannot_produce_to_the_offsets_topic(cluster):
    leader = until(lambda: (a := find_coordinator(cluster, "first")) and a.error_code == E.ERROR_CODE_NONE and a,
                   "the offsets topic to exist")
    address = f"{leader.coordinator.host}:{leader.coordinator.port}"
    reply = log_pb2_grpc.LogServiceStub(cluster.channel(address)).Produce(log_pb2.ProduceRequest(
        acks=-1, partitions=[log_pb2.ProducePartitionData(
            topic=OFFSETS, partition=leader.offsets_partition, records=[common_pb2.Record(value=b"forged")])]),
        timeout=10)
    answer = reply.partitions[0]
    assert answer.error_code == E.ERROR_CODE_INVALID_TOPIC, answer
    assert "internal topic" in answer.error_message, answer.error_message


def test_a_group_rebalances_when_its_topic_gains_partitions(cluster, replog):
    until(lambda: (a := find_coordinator(cluster, "growing")) and a.error_code == E.ERROR_CODE_NONE,
          "the offsets topic to exist")
    bootstrap = brokers(cluster)
    seen: set[tuple[int, int]] = set()
    lock = threading.Lock()
    members = [GroupMember(bootstrap, TOPIC, "growing", f"m{i}", seen, lock, **MEMBER_SETTINGS) for i in range(2)]
    try:
        def owned() -> list[TopicPartition]:
            return sorted(tp for m in members for tp in m.consumer.assignment())

        until(lambda: owned() == [TopicPartition(TOPIC, p) for p in range(2)] and all(
            m.consumer.assignment() for m in members), "the two members to share the two partitions")
        code, _, err = replog("topics", "add-partitions", TOPIC, "--partitions", "6")
        assert code == 0, err
        until(lambda: owned() == [TopicPartition(TOPIC, p) for p in range(6)],
              "the group to rebalance over the six partitions, each owned once")
        send(bootstrap, TOPIC, range(2, 6), 3)
        wanted = {(p, o) for p in range(2, 6) for o in range(3)}
        until(lambda: wanted <= seen, "the records of the new partitions to be consumed")
        assert all(m.error is None for m in members), [m.error for m in members]
    finally:
        for m in members:
            m.close()


def read_spans(cluster) -> list[dict]:
    spans = []
    for path in cluster.trace_dir.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                spans.append(json.loads(line))
    return spans


def test_a_rebalance_is_one_trace_with_the_members_calls_as_children(cluster):
    until(lambda: (a := find_coordinator(cluster, "traced")) and a.error_code == E.ERROR_CODE_NONE,
          "the offsets topic to exist")
    bootstrap = brokers(cluster)
    seen: set[tuple[int, int]] = set()
    members = [GroupMember(bootstrap, TOPIC, "traced", f"t{i}", seen, threading.Lock(), **MEMBER_SETTINGS)
               for i in range(2)]
    try:
        until(lambda: all(m.consumer.assignment() for m in members), "both members to get partitions")
        member_ids = {m.consumer._group._membership.member_id for m in members}
        generation = max(m.consumer.generation_id for m in members)
    finally:
        for m in members:
            m.close()

    rpc_names = ("replog.v1.GroupService/JoinGroup", "replog.v1.GroupService/SyncGroup")  # RPC span names

    def the_trace():
        spans = read_spans(cluster)
        for root in spans:
            attributes = root["attributes"]
            if (root["name"] == "group.rebalance" and attributes.get("group.id") == "traced"
                    and attributes.get("group.generation") == generation and attributes.get("group.members") == 2):
                tree = [s for s in spans if s["trace_id"] == root["trace_id"]]
                calls = {(s["name"], s["attributes"]["group.member_id"]) for s in tree
                         if s["name"] in rpc_names}
                if calls >= {(n, m) for n in rpc_names for m in member_ids}:
                    return root, tree
        return None

    root, tree = until(the_trace, "the rebalance's spans with both members' JoinGroup and SyncGroup calls")
    assert root["parent_span_id"] is None and root["attributes"]["group.outcome"] == "Stable"
    assert root["attributes"]["group.protocol"] in ("cooperative-sticky", "range"), root["attributes"]
    by_id = {s["span_id"]: s for s in tree}
    phases = sorted(s["name"] for s in tree if s["parent_span_id"] == root["span_id"] and s["name"].endswith("phase"))
    assert "group.join_phase" in phases and "group.sync_phase" in phases, phases
    for span in tree:
        if span["name"] in rpc_names:
            assert by_id[span["parent_span_id"]] is root, span
    assert len({s["resource"]["service.instance.id"] for s in tree}) == 1  # all on the coordinator's broker


def test_the_topology_export_has_the_groups_and_their_lag(cluster, capsys, tmp_path):
    """Group "first" committed 5 on each of orders-0 and orders-1 (the first test); 3 more records on orders-0
    make its lag 3."""
    import pyarrow.parquet as pq

    from replog.cli.main import main
    from replog.common import export_schema

    send(brokers(cluster), TOPIC, range(1), 3)
    coordinator = until(lambda: (a := find_coordinator(cluster, "first")) and a.error_code == E.ERROR_CODE_NONE and a,
                        "the coordinator of group first").coordinator.broker_id
    out = tmp_path / "export"
    code = main(["--gateway", cluster.gateway_address, "--output", "json", "export", "--groups", "--out", str(out)])
    printed, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(printed)["schema_version"] == export_schema.SCHEMA_VERSION
    tables = {name: pq.read_table(out / f"{name}.parquet") for name in ("groups", "group_offsets")}
    for name, table in tables.items():
        assert table.schema.equals(export_schema.arrow_schema(name), check_metadata=False), (name, table.schema)
    groups = {g["group"]: g for g in tables["groups"].to_pylist()}
    assert groups["first"]["state"] == "Empty" and groups["first"]["members"] == 0
    assert groups["first"]["generation"] >= 1 and groups["first"]["coordinator"] == coordinator
    offsets = [r for r in tables["group_offsets"].to_pylist() if r["group"] == "first"]
    assert offsets == [
        {"group": "first", "topic": TOPIC, "partition": 0, "committed_offset": 5, "log_end_offset": 8, "lag": 3},
        {"group": "first", "topic": TOPIC, "partition": 1, "committed_offset": 5, "log_end_offset": 5, "lag": 0}]

    plain = tmp_path / "plain"
    code = main(["--gateway", cluster.gateway_address, "--output", "json", "export", "--out", str(plain)])
    printed, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(printed)["tables"]["groups"]["rows"] == 0  # not asked: the tables are there, empty
