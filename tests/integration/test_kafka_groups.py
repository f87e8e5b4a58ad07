"""A consumer group of Kafka clients on the brokers' Kafka listeners, on a real cluster: three
librdkafka consumers share a topic's partitions through replog's group coordinator (FindCoordinator,
JoinGroup, SyncGroup, Heartbeat), commit their offsets (OffsetCommit) and read them back
(OffsetFetch); when one leaves (LeaveGroup) the other two take its partitions and go on from the
committed offsets, so every record is read and none is read twice. Three kafka-python consumers join
a group one by one, and each join moves partitions without a record lost or read twice."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import ConsumerGroupState
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from replog.devcluster import ClusterSpec

from .broker_helpers import wait_for
from .gateway_helpers import cli_runner
from .test_kafka_clients import create, kafka_bootstrap, produce_with_librdkafka, tls_config

pytestmark = pytest.mark.integration

PARTITIONS = 6
GROUP_DEADLINE_S = 120.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("kafka-groups"))
    yield factory(ClusterSpec(controllers=1, brokers=3, gateways=1))
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


class Member:
    """One librdkafka consumer of the group, committing each record's offset once it has it."""

    def __init__(self, cluster, group: str, topic: str, name: str) -> None:
        self.name = name
        self.assigned: set[int] = set()
        self.seen: list[tuple[int, int, bytes]] = []
        self.consumer = KafkaConsumer({
            "bootstrap.servers": kafka_bootstrap(cluster), **tls_config(), "group.id": group,
            "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
            "partition.assignment.strategy": "range"})
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, consumer, partitions) -> None:
        self.assigned |= {p.partition for p in partitions}

    def _revoked(self, consumer, partitions) -> None:
        self.assigned -= {p.partition for p in partitions}

    def poll(self) -> None:
        message = self.consumer.poll(0.1)
        if message is None or message.error() is not None:
            return
        self.seen.append((message.partition(), message.offset(), message.value()))
        self.consumer.commit(message=message, asynchronous=False)


def described_group(cluster, group: str, members: list[Member]) -> None:
    """ListGroups and DescribeGroups through librdkafka's admin client show the group as its members see it."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap(cluster), **tls_config()})
    listed = admin.list_consumer_groups(request_timeout=30).result(30)
    assert group in {g.group_id for g in listed.valid}
    described = admin.describe_consumer_groups([group], request_timeout=30)[group].result(30)
    assert described.state == ConsumerGroupState.STABLE
    assert {m.client_id: {tp.partition for tp in m.assignment.topic_partitions} for m in described.members} == \
        {m.name: m.assigned for m in members}


def poll_until(members: list[Member], done, what: str) -> None:
    deadline = time.monotonic() + GROUP_DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, f"timed out after {GROUP_DEADLINE_S} s waiting for {what}"
        for member in members:
            member.poll()


def test_three_librdkafka_consumers_share_a_topic_and_rebalance_when_one_leaves(cluster, replog):
    create(replog, cluster, "kafka-group", partitions=PARTITIONS)
    produce_with_librdkafka(cluster, "kafka-group", [(f"k{i}".encode(), f"first-{i}".encode(), None, 0)
                                                      for i in range(600)], partitioner="murmur2_random")
    members = [Member(cluster, "g-three", "kafka-group", f"member-{i}") for i in range(3)]
    try:
        def all_read_and_shared():
            return sum(len(m.seen) for m in members) >= 600 and all(len(m.assigned) == 2 for m in members)

        poll_until(members, all_read_and_shared, "three members of two partitions each to read 600 records")
        assigned = [m.assigned for m in members]
        assert set().union(*assigned) == set(range(PARTITIONS))
        assert sum(len(a) for a in assigned) == PARTITIONS  # no partition held twice
        for member in members:
            assert {p for p, _, _ in member.seen} <= member.assigned
        described_group(cluster, "g-three", members)

        leaving = members.pop()
        leaving.consumer.close()  # LeaveGroup: the others take its partitions without a session timeout
        produce_with_librdkafka(cluster, "kafka-group", [(f"k{i}".encode(), f"second-{i}".encode(), None, 0)
                                                          for i in range(300)], partitioner="murmur2_random")

        def rest_read():
            return sum(len(m.seen) for m in members) + len(leaving.seen) >= 900 and \
                set().union(*(m.assigned for m in members)) == set(range(PARTITIONS))

        poll_until(members, rest_read, "the two members left to take all six partitions and read 300 more")
        every = [record for m in [*members, leaving] for record in m.seen]
        assert len(every) == 900 and len({(p, o) for p, o, _ in every}) == 900  # each record read exactly once
        committed = members[0].consumer.committed([KafkaTopicPartition("kafka-group", p) for p in range(PARTITIONS)],
                                                  timeout=30)
        ends = {p: max(o for q, o, _ in every if q == p) + 1 for p in range(PARTITIONS)}
        assert {c.partition: c.offset for c in committed} == ends
    finally:
        for member in members:
            member.consumer.close()


def test_a_kafka_python_group_consumer_reads_and_commits(cluster, replog):
    from kafka import KafkaConsumer as PyConsumer
    from kafka import TopicPartition as PyTopicPartition

    from .test_kafka_clients import kafka_python_tls

    create(replog, cluster, "kafka-python-group", partitions=3)
    produce_with_librdkafka(cluster, "kafka-python-group", [(f"k{i}".encode(), f"v{i}".encode(), None, 0)
                                                             for i in range(90)])
    consumer = PyConsumer("kafka-python-group", bootstrap_servers=kafka_bootstrap(cluster).split(","),
                          group_id="py-group", auto_offset_reset="earliest", enable_auto_commit=False,
                          **kafka_python_tls())
    try:
        seen = set()
        deadline = time.monotonic() + GROUP_DEADLINE_S
        while len(seen) < 90:
            assert time.monotonic() < deadline, f"kafka-python's group member read {len(seen)} of 90"
            for records in consumer.poll(timeout_ms=500).values():
                seen.update((r.partition, r.offset) for r in records)
        consumer.commit()
        assert consumer.assignment() == {PyTopicPartition("kafka-python-group", p) for p in range(3)}
        ends = {p: max(o for q, o in seen if q == p) + 1 for p in range(3)}
        assert {p: consumer.committed(PyTopicPartition("kafka-python-group", p)) for p in range(3)} == ends
    finally:
        consumer.close()


class PythonMember:
    """One kafka-python consumer of the group, polled by its own thread as an application's would be, so the
    members already in the group go on polling (and so heartbeating and rejoining) while a new one joins. It
    commits each poll's records before counting them: a record counted is one the group will not hand out
    again."""

    def __init__(self, cluster, group: str, topic: str, name: str) -> None:
        from kafka import KafkaConsumer as PyConsumer

        from .test_kafka_clients import kafka_python_tls

        self.name = name
        self.seen: list[tuple[int, int]] = []
        self.assigned: set[int] = set()
        self.failure: BaseException | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = PyConsumer(topic, bootstrap_servers=kafka_bootstrap(cluster).split(","), group_id=group,
                                    client_id=name, auto_offset_reset="earliest", enable_auto_commit=False,
                                    session_timeout_ms=10_000, heartbeat_interval_ms=500, **kafka_python_tls())
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batches = self._consumer.poll(timeout_ms=200)
                if batches:
                    self._consumer.commit()
                with self._lock:
                    self.seen += [(r.partition, r.offset) for records in batches.values() for r in records]
                    self.assigned = {tp.partition for tp in self._consumer.assignment()}
        except BaseException as exc:  # noqa: BLE001 - reported by the test's wait, not lost in a thread
            self.failure = exc
        finally:
            self._consumer.close()

    def snapshot(self) -> tuple[list[tuple[int, int]], set[int]]:
        assert self.failure is None, f"{self.name} failed: {self.failure!r}"
        with self._lock:
            return list(self.seen), set(self.assigned)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def held_evenly(members: list[PythonMember]) -> bool:
    """Every partition held, each by one member, the same number by each."""
    held = [m.snapshot()[1] for m in members]
    return (all(len(h) == PARTITIONS // len(members) for h in held)
            and set().union(*held) == set(range(PARTITIONS)))


def records_read(members: list[PythonMember]) -> int:
    return sum(len(m.snapshot()[0]) for m in members)


def test_three_kafka_python_consumers_join_one_by_one_and_rebalance(cluster, replog):
    """Each join rebalances the group: the partitions are shared out again with each held by exactly one
    member, and the records produced after each join are read once, by the member holding their partition."""
    topic, group, per_round = "kafka-python-rebalance", "py-rebalance", 120
    create(replog, cluster, topic, partitions=PARTITIONS)
    members: list[PythonMember] = []
    read_before: dict[str, int] = {}
    try:
        for joined in range(1, 4):
            members.append(PythonMember(cluster, group, topic, f"py-member-{joined}"))
            wait_for(lambda: held_evenly(members), GROUP_DEADLINE_S,
                     f"{joined} kafka-python members to hold {PARTITIONS // joined} partitions each")
            read_before = {m.name: len(m.snapshot()[0]) for m in members}
            produce_with_librdkafka(cluster, topic, [(f"r{joined}-{i}".encode(), b"v", None, 0)
                                                     for i in range(per_round)], partitioner="murmur2_random")
            wait_for(lambda: records_read(members) >= len(members) * per_round, GROUP_DEADLINE_S,
                     f"the group to read round {joined}'s {per_round} records")
        for member in members:  # the last round: each member read only the partitions it holds
            seen, held = member.snapshot()
            assert seen[read_before[member.name]:], f"{member.name} read none of the last round"
            assert {p for p, _ in seen[read_before[member.name]:]} <= held
        every = [record for m in members for record in m.snapshot()[0]]
        assert len(every) == 3 * per_round and len(set(every)) == 3 * per_round  # each record read exactly once
    finally:
        for member in members:
            member.stop()
