"""Consumer groups on real brokers (issue 43): three members share a 12-partition topic with no
partition owned twice, commits are stored and fetched, a stale generation is fenced, and after the
coordinator's broker is killed the new coordinator has every committed offset and still fences."""

from __future__ import annotations

import threading
import urllib.request

import grpc
import pytest

from replog.v1 import common_pb2, group_pb2, group_pb2_grpc

from .gateway_helpers import cli_runner
from .group_helpers import until as wait_until

pytestmark = pytest.mark.integration

OFFSETS = "__consumer_offsets"
TOPIC = "orders"
GROUP = "billing"
DEADLINE_S = 60.0
E = common_pb2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("groups"))
    yield factory()
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def stub(cluster, address: str) -> group_pb2_grpc.GroupServiceStub:
    return group_pb2_grpc.GroupServiceStub(cluster.channel(address))


def any_broker(cluster) -> str:
    return next(p.address for p in cluster.of_role("broker") if cluster.is_running(p.name))


def until(check, what: str, deadline_s: float = DEADLINE_S):
    return wait_until(check, what, deadline_s)


def coordinator(cluster, group_id: str) -> tuple[group_pb2_grpc.GroupServiceStub, int]:
    """The coordinator once it answers for the group (loaded), and its broker id."""
    def ready():
        try:
            found = stub(cluster, any_broker(cluster)).FindCoordinator(
                group_pb2.FindCoordinatorRequest(group_id=group_id), timeout=5)
        except grpc.RpcError:
            return None
        if found.error_code != E.ERROR_CODE_NONE:
            return None
        s = stub(cluster, f"{found.coordinator.host}:{found.coordinator.port}")
        try:
            probe = s.OffsetFetch(group_pb2.OffsetFetchRequest(group_id=group_id), timeout=5)
        except grpc.RpcError:
            return None
        return (s, found.coordinator.broker_id) if probe.error_code == E.ERROR_CODE_NONE else None
    return until(ready, f"the coordinator of {group_id}")


def scrape(process) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{process.metrics_port}/metrics", timeout=5).read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def join_all(s, names: list[str]) -> dict[str, group_pb2.JoinGroupResponse]:
    answers: dict[str, group_pb2.JoinGroupResponse] = {}

    def join(name: str) -> None:
        answers[name] = s.JoinGroup(group_pb2.JoinGroupRequest(
            group_id=GROUP, client_id=name, session_timeout_ms=6000, rebalance_timeout_ms=20000,
            protocol_type="consumer", protocols=[group_pb2.GroupProtocol(name="roundrobin", topics=[TOPIC])]),
            timeout=40)

    threads = [threading.Thread(target=join, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(45)
    assert set(answers) == set(names)
    return answers


def sync_all(s, joined) -> dict[str, list[tuple[str, int]]]:
    leader = next(a for a in joined.values() if a.members)
    members = sorted(m.member_id for m in leader.members)
    plan = [group_pb2.MemberAssignment(member_id=m, partitions=[
        common_pb2.TopicPartition(topic=TOPIC, partition=p) for p in range(12) if p % len(members) == i])
        for i, m in enumerate(members)]
    got: dict[str, list[tuple[str, int]]] = {}

    def sync(answer) -> None:
        request = group_pb2.SyncGroupRequest(group_id=GROUP, generation_id=answer.generation_id,
                                             member_id=answer.member_id,
                                             assignments=plan if answer.members else [])
        reply = s.SyncGroup(request, timeout=40)
        assert reply.error_code == E.ERROR_CODE_NONE, reply.error_message
        got[answer.member_id] = [(tp.topic, tp.partition) for tp in reply.assignment.partitions]

    threads = [threading.Thread(target=sync, args=(a,)) for a in joined.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(45)
    return got


def commit(s, generation_id: int, member_id: str, offsets: dict[int, int]) -> group_pb2.OffsetCommitResponse:
    return s.OffsetCommit(group_pb2.OffsetCommitRequest(
        group_id=GROUP, generation_id=generation_id, member_id=member_id,
        partitions=[group_pb2.OffsetCommitPartition(topic=TOPIC, partition=p, offset=o, leader_epoch=0)
                    for p, o in offsets.items()]), timeout=30)


def test_a_group_shares_partitions_commits_and_survives_its_coordinators_death(cluster, replog):
    for topic, partitions in ((OFFSETS, "3"), (TOPIC, "12")):
        code, _, err = replog("topics", "create", topic, "--partitions", partitions, "--replication-factor", "3")
        assert code == 0, err
    s, coordinator_id = coordinator(cluster, GROUP)

    joined = join_all(s, ["c1", "c2", "c3"])
    assert {a.error_code for a in joined.values()} == {E.ERROR_CODE_NONE}
    assert {a.generation_id for a in joined.values()} == {1}
    owned = sync_all(s, joined)
    every = [tp for tps in owned.values() for tp in tps]
    assert sorted(every) == [(TOPIC, p) for p in range(12)]  # each partition owned once

    member = next(iter(owned))
    mine = {p: 100 + p for _, p in owned[member]}
    assert commit(s, 1, member, mine).error_code == E.ERROR_CODE_NONE
    assert commit(s, 0, member, mine).error_code == E.ERROR_CODE_ILLEGAL_GENERATION
    assert commit(s, 1, "zombie", mine).error_code == E.ERROR_CODE_UNKNOWN_MEMBER_ID
    fetched = s.OffsetFetch(group_pb2.OffsetFetchRequest(group_id=GROUP), timeout=10)
    assert {o.partition: o.offset for o in fetched.offsets} == mine

    described = s.DescribeGroups(group_pb2.DescribeGroupsRequest(group_ids=[GROUP]), timeout=10).groups[0]
    assert described.state == group_pb2.GROUP_STATE_STABLE and len(described.members) == 3
    metrics = scrape(cluster.processes[f"broker-{coordinator_id}"])
    assert metrics[f'replog_broker_group_members{{group="{GROUP}"}}'] == 3
    assert metrics["replog_broker_group_rebalances_total"] >= 1
    assert metrics["replog_broker_group_offset_commits_total"] == len(mine)
    # no record was produced: every committed offset is past the high watermark, so the lag is 0
    assert metrics[f'replog_broker_group_lag{{group="{GROUP}",partition="{next(iter(mine))}",topic="{TOPIC}"}}'] == 0

    broker = f"broker-{coordinator_id}"
    cluster.kill(broker)
    s2, moved_to = coordinator(cluster, GROUP)
    assert moved_to != coordinator_id
    fetched = s2.OffsetFetch(group_pb2.OffsetFetchRequest(group_id=GROUP), timeout=10)
    assert {o.partition: o.offset for o in fetched.offsets} == mine  # no committed offset lost
    assert commit(s2, 0, member, mine).error_code == E.ERROR_CODE_ILLEGAL_GENERATION  # fencing survived
    assert commit(s2, 1, member, {p: o + 1 for p, o in mine.items()}).error_code == E.ERROR_CODE_NONE
    cluster.start(broker)
    cluster.wait_healthy([broker])


def test_bad_requests_get_typed_errors_or_invalid_argument(cluster):
    s = stub(cluster, any_broker(cluster))
    found = s.FindCoordinator(group_pb2.FindCoordinatorRequest(group_id="a b"), timeout=10)
    assert found.error_code == E.ERROR_CODE_INVALID_GROUP_ID and "may only hold" in found.error_message
    with pytest.raises(grpc.RpcError) as caught:
        s.OffsetCommit(group_pb2.OffsetCommitRequest(group_id="g", generation_id=-1, partitions=[
            group_pb2.OffsetCommitPartition(topic=TOPIC, partition=0, offset=-5)]), timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "offset -5" in caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:
        s.JoinGroup(group_pb2.JoinGroupRequest(group_id="g", session_timeout_ms=6000, protocol_type="consumer"),
                    timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "protocols" in caught.value.details()
