"""Every topic config a user can set does what it says, also when changed on a running partition
(issue 41): segment.bytes and segment.ms roll segments, max.message.bytes bounds a batch, the flush
keys reach the running log; an unknown key or a bad value is refused naming the rule, and
`topics describe --configs` shows each value with its source. Retention has its own file."""

from __future__ import annotations

import json

import pytest

from replog.broker.log import RECOVERY_POINT_CHECKPOINT_FILE, read_offsets_checkpoint
from replog.common.records import encode_batch
from replog.v1 import common_pb2

from .broker_helpers import produce_raw
from .gateway_helpers import cli_runner
from .retention_helpers import (
    DEADLINE_S,
    create,
    leader_of,
    module_cluster,
    produce,
    replicas,
    segment_files,
    wait_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from module_cluster(tmp_path_factory, "topic-configs")


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def test_segment_bytes_rolls_segments_on_every_replica(cluster, replog):
    brokers = create(cluster, replog, "small-segments", {"segment.bytes": "2048"})
    plain = create(cluster, replog, "plain-segments", {})
    for _ in range(12):
        produce(cluster, "small-segments", [b"s" * 400])
        produce(cluster, "plain-segments", [b"s" * 400])
    wait_for(lambda: all(len(segment_files(cluster, b, "small-segments")) >= 3 for b in brokers), DEADLINE_S,
             "'small-segments' to have rolled on every replica")
    for broker_id in brokers:
        assert all(path.stat().st_size <= 2048 for path in segment_files(cluster, broker_id, "small-segments"))
    assert all(len(segment_files(cluster, b, "plain-segments")) == 1 for b in plain)  # the broker's 64 MiB


def test_segment_ms_rolls_a_segment_once_it_is_that_old(cluster, replog):
    brokers = create(cluster, replog, "hourly", {"segment.ms": "300"})

    def rolled():  # each append may roll the active segment once it is 300 ms old
        produce(cluster, "hourly", [b"tick"])
        return all(len(segment_files(cluster, b, "hourly")) >= 2 for b in brokers)

    wait_for(rolled, DEADLINE_S, "'hourly' to roll by age on every replica", interval_s=0.2)


def test_max_message_bytes_bounds_a_batch_and_a_change_applies_without_a_restart(cluster, replog):
    create(cluster, replog, "bounded-batches", {"max.message.bytes": "1000"})
    leader = leader_of(cluster, "bounded-batches")
    big = encode_batch([(None, b"b" * 2000, 0)])
    answer = produce_raw(cluster, leader, "bounded-batches", big)
    assert answer.error_code == common_pb2.ERROR_CODE_RECORD_TOO_LARGE
    assert "max.message.bytes" in answer.error_message and "1000" in answer.error_message
    assert produce(cluster, "bounded-batches", [b"small"]) == 0

    code, _, err = replog("topics", "alter", "bounded-batches", "--config", "max.message.bytes=5000")
    assert code == 0, err
    accepted = wait_for(lambda: produce_raw(cluster, leader, "bounded-batches", big).error_code
                        == common_pb2.ERROR_CODE_NONE, DEADLINE_S, "the larger limit to reach the leader")
    assert accepted


@pytest.mark.parametrize("key, value", [("flush.messages", "1"), ("flush.ms", "100")])
def test_a_flush_key_makes_the_running_log_fsync(cluster, replog, key, value):
    """The recovery point, checkpointed by each broker, says how far a log is known to be on disk:
    without a flush key an idle active segment is never fsynced, so it stays where the log began."""
    topic = f"flushed-{key.replace('.', '-')}"
    brokers = create(cluster, replog, topic, {key: value})
    unflushed = f"unflushed-{key.replace('.', '-')}"
    create(cluster, replog, unflushed, {})
    for _ in range(5):
        produce(cluster, topic, [b"durable"])
        produce(cluster, unflushed, [b"in the page cache"])

    def checkpointed():
        points = [read_offsets_checkpoint(cluster.data_dir(f"broker-{b}") / RECOVERY_POINT_CHECKPOINT_FILE)
                  for b in brokers]
        return all(p.get((topic, 0)) == 5 for p in points) and points

    points = wait_for(checkpointed, DEADLINE_S, f"the recovery point of {topic} to reach its end on every replica")
    assert all(p.get((unflushed, 0)) == 0 for p in points)


def test_an_unknown_key_or_a_bad_value_is_refused_naming_the_rule_and_nothing_is_stored(cluster, replog):
    create(cluster, replog, "strict", {})
    code, _, err = replog("topics", "alter", "strict", "--config", "retention.hours=1")
    assert code == 1 and "Unknown topic config 'retention.hours'" in err
    assert "retention.ms" in err and "segment.bytes" in err  # the supported keys are listed
    code, _, err = replog("topics", "alter", "strict", "--config", "retention.ms=soon")
    assert code == 1 and "'retention.ms': expected an integer" in err
    code, _, err = replog("topics", "alter", "strict", "--config", "segment.bytes=10")
    assert code == 1 and "'segment.bytes': must be between 14 and" in err
    code, _, err = replog("topics", "create", "strict-too", "--partitions", "1", "--replication-factor", "1",
                          "--config", "max.message.bytes=0")
    assert code == 1 and "'max.message.bytes': must be between 1 and" in err
    code, out, _ = replog("-o", "json", "topics", "describe", "strict", "--configs")
    entries = json.loads(out)["topics"][0]["config_entries"]
    assert all(e["source"] != "topic override" for e in entries)


def test_describe_configs_shows_each_value_and_its_source(cluster, replog):
    brokers = create(cluster, replog, "described", {"retention.ms": "60000", "segment.bytes": "1048576"})
    code, out, err = replog("-o", "json", "topics", "describe", "described", "--configs")
    assert code == 0, err
    entries = {e["name"]: (e["value"], e["source"]) for e in json.loads(out)["topics"][0]["config_entries"]}
    assert entries["retention.ms"] == ("60000", "topic override")
    assert entries["segment.bytes"] == ("1048576", "topic override")
    assert entries["max.message.bytes"] == (str(1024 * 1024), "broker default")  # the broker's message_max_bytes
    assert entries["segment.ms"] == (str(7 * 24 * 3600 * 1000), "broker default")
    assert entries["retention.bytes"] == ("-1", "broker default")
    code, out, _ = replog("topics", "describe", "described", "--configs")
    assert code == 0 and "retention.ms" in out and "topic override" in out and "broker default" in out

    produce(cluster, "described", [b"one", b"two", b"three"])
    wait_for(lambda: all(d.high_watermark == 3 for d in replicas(cluster, "described", brokers).values()),
             DEADLINE_S, "every replica of 'described' to hold the HW 3")
    code, out, err = replog("-o", "json", "topics", "describe", "described")
    assert code == 0, err
    (partition,) = json.loads(out)["topics"][0]["partitions"]
    assert (partition["log_start_offset"], partition["high_watermark"]) == (0, 3) and partition["size_bytes"] > 0
