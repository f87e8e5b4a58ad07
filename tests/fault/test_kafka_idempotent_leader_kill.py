"""A leader killed under a librdkafka idempotent producer (acks=all) writing through the brokers'
Kafka listeners: the producer retries on the new leader through the Kafka Metadata answers (which
follow the failover), the leader's idempotence check turns its retries of batches the dead leader
had already replicated into their first offsets, and the history checker finds nothing lost,
duplicated or out of order in the final committed logs.

librdkafka retries under the same producer id and sequence numbers across the leader change; a
batch it cannot place in order (OUT_OF_ORDER_SEQUENCE_NUMBER after a truncation, say) would fail
its delivery rather than be written twice, and the test allows such failures, but no loss."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Producer as KafkaProducer

from replog.common.security import local
from replog.devcluster import ClusterSpec

from tests.fault.history import checker
from tests.fault.history.cells import read_final_logs, settle
from tests.fault.history.history import Fail, History, Indeterminate, Invoke, Ok, record_value
from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    create_topic,
    partition_state,
    start_cluster,
    wait_for_isr,
    zk_session,
)

pytestmark = pytest.mark.fault

TOPIC = "kafka-idempotent-rf3"
PARTITIONS = 2
SESSION_MS = 3000
LOAD_BEFORE_S = 3.0
LOAD_AFTER_S = 8.0
SEND_INTERVAL_S = 0.004
FLUSH_DEADLINE_S = 90.0


def test_a_leader_killed_under_an_idempotent_librdkafka_producer_loses_and_duplicates_nothing(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, brokers=3, gateways=0,
                                        zookeeper_session_timeout_ms=SESSION_MS))
    brokers = {p.instance_id: p for p in cluster.of_role("broker")}
    with zk_session(cluster) as zk:
        create_topic(zk, TOPIC, {0: (1, 2, 3), 1: (2, 3, 1)}, {"min.insync.replicas": "2"})
        for partition in range(PARTITIONS):
            wait_for_isr(cluster, zk, TOPIC, {1, 2, 3}, 60, partition=partition)
        victim = partition_state(zk, TOPIC, 0).leader

        history = History()
        producer = KafkaProducer({
            "bootstrap.servers": ",".join(f"{p.host}:{p.kafka_port}" for p in brokers.values()),
            "security.protocol": "ssl", "ssl.ca.location": os.environ[local.ENV_CA],
            "ssl.certificate.location": os.environ[local.ENV_CERT], "ssl.key.location": os.environ[local.ENV_KEY],
            "enable.idempotence": True, "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000,
            "topic.metadata.refresh.interval.ms": 1000})
        answered: set[int] = set()

        def report(seq: int):
            def delivered(error, message):
                answered.add(seq)
                if error is None:
                    history.add(Ok(time.monotonic(), 0, seq, message.offset()))
                else:
                    history.add(Fail(time.monotonic(), 0, seq, str(error)))
            return delivered

        seq = 0
        started = time.monotonic()
        killed = False
        while time.monotonic() - started < LOAD_BEFORE_S + LOAD_AFTER_S:
            if not killed and time.monotonic() - started >= LOAD_BEFORE_S:
                history.mark("fault", time.monotonic())
                cluster.kill(f"broker-{victim}")
                killed = True
            partition = seq % PARTITIONS
            history.add(Invoke(time.monotonic(), 0, seq, TOPIC, partition))
            producer.produce(TOPIC, value=record_value(0, seq), partition=partition, on_delivery=report(seq))
            seq += 1
            producer.poll(SEND_INTERVAL_S)
        cluster.start(f"broker-{victim}")
        history.mark("heal", time.monotonic())
        assert producer.flush(FLUSH_DEADLINE_S) == 0, "records left unanswered after the flush"
        for unanswered in set(range(seq)) - answered:
            history.add(Indeterminate(time.monotonic(), 0, unanswered))

        _, high_watermarks = settle(cluster, zk, {TOPIC: PARTITIONS})
    final_logs = read_final_logs([p.address for p in brokers.values()], high_watermarks)
    report_ = checker.check(history.events(), final_logs)
    assert not report_.violations, checker.evidence(report_)
    acknowledged = report_.acknowledged
    failed = sum(s.failed for s in report_.partitions.values())
    assert acknowledged >= seq * 0.9, f"only {acknowledged} of {seq} records acknowledged ({failed} failed)"
    assert sum(len(log) for log in final_logs.values()) >= acknowledged
    fault_s = next(e.at_s for e in history.events() if getattr(e, "name", "") == "fault")
    moved = [e for e in history.events() if isinstance(e, Ok) and e.at_s > fault_s and e.seq % PARTITIONS == 0]
    assert moved, "no record of the killed leader's partition was acknowledged after the kill"
    print(f"sent {seq}, acknowledged {acknowledged}, failed {failed}, "
          f"{len(moved)} acknowledged on partition 0 after its leader was killed")
