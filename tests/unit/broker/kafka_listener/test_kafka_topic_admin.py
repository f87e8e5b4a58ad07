"""The Kafka listener's CreateTopics and DeleteTopics around the shared topic decisions: a refusal's
typed code becomes Kafka's per-topic error, a Kafka topic entry becomes the gateway's CreateTopic, and
the timeout_ms wait ends at its deadline (on a fake clock)."""

from __future__ import annotations

import pytest

from replog.broker.kafka import errors
from replog.broker.kafka.handlers import _create_spec
from replog.broker.kafka.topic_admin import KafkaTopicAdmin
from replog.common.error_codes import ErrorCode
from replog.common.topic_admin.core.refusal import aborted, already_exists, invalid


def entry(name="t", partitions=3, replicas=2, assignments=(), configs=()):
    return {"name": name, "num_partitions": partitions, "replication_factor": replicas,
            "assignments": [{"partition_index": p, "broker_ids": list(b)} for p, b in assignments],
            "configs": [{"name": k, "value": v} for k, v in configs]}


@pytest.mark.parametrize("refusal, expected", [
    (invalid("bad name", ErrorCode.INVALID_TOPIC), errors.INVALID_TOPIC_EXCEPTION),
    (invalid("zero", ErrorCode.INVALID_PARTITIONS), 37),
    (invalid("bad config", ErrorCode.INVALID_CONFIG), 40),
    (already_exists("exists"), 36),
    (aborted("raced"), errors.REQUEST_TIMED_OUT),
    (invalid("no code"), errors.INVALID_REQUEST),
])
def test_a_refusal_is_answered_with_kafkas_code_and_its_message(refusal, expected):
    def refuse():
        raise refusal

    assert KafkaTopicAdmin._guarded(refuse, "create topic 't'") == (expected, refusal.message)


def test_a_kafka_topic_entry_becomes_the_gateways_create_request():
    spec, problem = _create_spec(entry(configs=[("retention.ms", "1000")]))
    assert problem is None
    assert (spec.name, spec.partitions, spec.replication_factor, dict(spec.configs)) == ("t", 3, 2, {"retention.ms": "1000"})
    spec, problem = _create_spec(entry(partitions=-1, replicas=-1, assignments=[(0, (1, 2)), (1, (2, 3))]))
    assert problem is None and spec.assignment == (("", 0, (1, 2)), ("", 1, (2, 3)))


@pytest.mark.parametrize("bad, code", [
    (entry(assignments=[(0, (1,))]), errors.INVALID_REQUEST),          # counts given with an assignment
    (entry(configs=[("retention.ms", None)]), 40),
    (entry(configs=[("retention.ms", "1"), ("retention.ms", "2")]), errors.INVALID_REQUEST),
])
def test_a_malformed_entry_is_refused_before_any_decision(bad, code):
    spec, problem = _create_spec(bad)
    assert spec is None and problem[0] == code


class FakeMetadata:
    def __init__(self, known: dict[str, int]):
        self.known = known

    def partition_count(self, topic: str) -> int:
        return self.known.get(topic, 0)


def test_the_wait_for_a_deletion_ends_at_the_timeout_with_what_is_left():
    now = [0.0]
    metadata = FakeMetadata({"stays": 1, "goes": 1})

    def sleep(seconds: float) -> None:
        now[0] += seconds
        if now[0] > 1.0:
            metadata.known.pop("goes", None)

    admin = KafkaTopicAdmin(None, metadata, None, monotonic_s=lambda: now[0], sleep_s=sleep)
    assert admin.await_gone(["stays", "goes"], timeout_ms=5_000) == {"stays"}
    assert 5.0 <= now[0] < 5.2
