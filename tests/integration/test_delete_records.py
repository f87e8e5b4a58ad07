"""DeleteRecords through the CLI on a three-replica partition (issue 41): every replica's log start
moves, records below it are unreadable and those above intact, and it survives a restart and a
leader change; bad requests are refused before anything is deleted."""

from __future__ import annotations

import json
import time

import pytest

from replog.client import Consumer
from replog.v1 import common_pb2

from .broker_helpers import broker_name, zk_session
from .gateway_helpers import cli_runner
from .retention_helpers import (
    DEADLINE_S,
    create,
    earliest,
    fetch_at,
    module_cluster,
    offsets_file,
    produce,
    replicas,
    wait_for,
    wait_for_leader,
)

pytestmark = pytest.mark.integration

RECORDS = 100


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from module_cluster(tmp_path_factory, "delete-records")


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def fill(cluster, topic: str) -> None:
    for batch in range(RECORDS // 10):
        produce(cluster, topic, [f"record-{batch * 10 + i}".encode() for i in range(10)])


def starts_at(cluster, topic: str, brokers, offset: int, what: str) -> None:
    wait_for(lambda: (lambda found: len(found) == len(brokers)
                      and all(d.log_start_offset == offset for d in found.values()))(replicas(cluster, topic, brokers)),
             DEADLINE_S, f"every replica of {topic} to start at {offset} ({what})")


def read_all(cluster, topic: str, start: int) -> list[tuple[int, bytes]]:
    bootstrap = [p.address for p in cluster.of_role("broker") if cluster.is_running(p.name)]
    with Consumer(bootstrap, topic, start=start) as consumer:
        seen = []
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < RECORDS - start and time.monotonic() < deadline:
            seen += consumer.poll(500)
    return [(r.offset, r.value) for r in seen]


def test_delete_records_moves_every_replicas_start_and_survives_a_restart_and_a_leader_change(
        cluster, replog, tmp_path):
    brokers = create(cluster, replog, "ledger", {"min.insync.replicas": "2"})
    leader, followers = brokers[0], brokers[1:]
    fill(cluster, "ledger")
    code, out, err = replog("-o", "json", "delete-records", "--offset-json-file",
                            offsets_file(tmp_path / "offsets.json", "ledger", 40))
    assert code == 0, err
    assert json.loads(out)["partitions"] == [{"topic": "ledger", "partition": 0, "low_watermark": 40,
                                              "result": "NONE", "message": ""}]
    starts_at(cluster, "ledger", brokers, 40, "after delete-records")
    assert earliest(cluster, leader, "ledger").offset == 40
    below = fetch_at(cluster, leader, "ledger", 39)
    assert below.error_code == common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE and below.log_start_offset == 40
    expected = [(offset, f"record-{offset}".encode()) for offset in range(40, RECORDS)]
    assert read_all(cluster, "ledger", 40) == expected

    cluster.restart(broker_name(followers[0]))  # a follower's start comes back from its checkpoint
    assert replicas(cluster, "ledger", [followers[0]])[followers[0]].log_start_offset == 40

    cluster.kill(broker_name(leader))  # kill -9: the leader's start was checkpointed before it answered
    with zk_session(cluster) as zk:
        new_leader = wait_for_leader(cluster, zk, "ledger", None, DEADLINE_S).leader
        assert new_leader != leader
        assert earliest(cluster, new_leader, "ledger").offset == 40
        assert read_all(cluster, "ledger", 40) == expected
        cluster.start(broker_name(leader))
        cluster.wait_healthy([broker_name(leader)])
        starts_at(cluster, "ledger", brokers, 40, "after the old leader came back")
    assert fetch_at(cluster, new_leader, "ledger", 39).error_code == common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE


def test_minus_one_deletes_up_to_the_high_watermark(cluster, replog, tmp_path):
    brokers = create(cluster, replog, "drained", {})
    fill(cluster, "drained")
    code, out, err = replog("-o", "json", "delete-records", "--offset-json-file",
                            offsets_file(tmp_path / "all.json", "drained", -1))
    assert code == 0, err
    assert json.loads(out)["partitions"][0]["low_watermark"] == RECORDS
    starts_at(cluster, "drained", brokers, RECORDS, "after delete-records -1")
    assert produce(cluster, "drained", [b"after"]) == RECORDS  # the log goes on from where it was


@pytest.mark.parametrize("content, words", [
    ({"partitions": [{"topic": "guarded", "partition": 0, "offset": 1000}], "version": 1},
     "is above its high watermark 100"),
    ({"partitions": [{"topic": "guarded", "partition": 0, "offset": -3}], "version": 1}, "is negative"),
    ({"partitions": [{"topic": "guarded", "partition": 7, "offset": 1}], "version": 1}, "has no partition 7"),
    ({"partitions": [{"topic": "nowhere", "partition": 0, "offset": 1}], "version": 1},
     "Topic 'nowhere' does not exist"),
    ({"partitions": [{"topic": "guarded", "partition": 0, "offset": 1}, {"topic": "guarded", "partition": 0,
                                                                         "offset": 2}], "version": 1}, "named twice"),
    ({"partitions": [{"topic": "guarded", "partition": 0}], "version": 1}, "an integer 'offset'"),
    ({"partitions": [], "version": 1}, "at least one partition"),
])
def test_a_bad_request_is_refused_in_one_line_and_deletes_nothing(cluster, replog, tmp_path, content, words):
    if not replicas(cluster, "guarded", [1, 2, 3]):
        create(cluster, replog, "guarded", {})
        fill(cluster, "guarded")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    code, out, err = replog("delete-records", "--offset-json-file", str(path))
    assert code == 1 and words in err and len(err.strip().splitlines()) == 1, err
    assert all(d.log_start_offset == 0 for d in replicas(cluster, "guarded", [1, 2, 3]).values())
