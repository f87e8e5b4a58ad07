"""Records with headers and timestamps end to end, on a real cluster (a controller, three brokers, a
gateway): through the Python client, the CLI and grpcurl; a topic with
message.timestamp.type=LogAppendTime takes the leader's clock on every replica, and a change of that
config applies to the running partition; bad headers are refused with a message."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replog.client import Consumer, Producer, TimestampType
from replog.common.records import encode_batch, validate_batch, with_log_append_time
from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2, log_pb2

from .broker_helpers import log_stub, wait_caught_up, wait_for, wait_for_leader, zk_session
from .gateway_helpers import cli_runner
from .tls_helpers import grpcurl_flags

pytestmark = pytest.mark.integration

BROKERS = (1, 2, 3)
LEADER_DEADLINE_S = 60.0
CONFIG_DEADLINE_S = 20.0  # a config change reaches the leader through one ZooKeeper watch
T0_MS = 1_600_000_000_000  # long before the test runs: a CreateTime a LogAppendTime leader must replace


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("record-headers"))
    yield factory(ClusterSpec(controllers=1, brokers=3, gateways=1))
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def create(replog, cluster, topic: str, *configs: str) -> int:
    """Create a one-partition, three-replica topic through the CLI; the id of its leader once it leads."""
    flags = [flag for config in configs for flag in ("--config", config)]
    code, _, err = replog("topics", "create", topic, "--partitions", "1", "--replication-factor", "3", *flags)
    assert code == 0, err
    with zk_session(cluster) as zk:
        return wait_for_leader(cluster, zk, topic, None, LEADER_DEADLINE_S).leader


def read_all(cluster, topic: str, count: int, **options) -> list:
    with Consumer(bootstrap(cluster), topic, **options) as consumer:
        records: list = []
        deadline = time.monotonic() + 30
        while len(records) < count:
            assert time.monotonic() < deadline, f"read {len(records)} of {count} records of {topic} in 30 s"
            records += consumer.poll(500)
        return records


def test_the_python_client_round_trips_headers_and_create_times(cluster, replog):
    create(replog, cluster, "client-headers")
    with Producer(bootstrap(cluster)) as producer:
        futures = [
            producer.send("client-headers", b"plain", timestamp_ms=T0_MS),
            producer.send("client-headers", b"tagged", key=b"k", headers=[("trace", b"t-1"), ("none", None)],
                          timestamp_ms=T0_MS + 1000),
            producer.send("client-headers", b"mapped", headers={"a": b"1", "a2": b""}, timestamp_ms=T0_MS + 2000),
        ]
        producer.flush(30)
    assert [f.result(0).offset for f in futures] == [0, 1, 2]
    records = read_all(cluster, "client-headers", 3)
    assert [(r.offset, r.key, r.value, r.timestamp_ms, r.timestamp_type, r.headers) for r in records] == [
        (0, None, b"plain", T0_MS, TimestampType.CREATE_TIME, ()),
        (1, b"k", b"tagged", T0_MS + 1000, TimestampType.CREATE_TIME, (("trace", b"t-1"), ("none", None))),
        (2, None, b"mapped", T0_MS + 2000, TimestampType.CREATE_TIME, (("a", b"1"), ("a2", b""))),
    ]
    later = read_all(cluster, "client-headers", 2, start_timestamp_ms=T0_MS + 500)
    assert [r.value for r in later] == [b"tagged", b"mapped"]


def test_the_producer_refuses_bad_headers_before_sending(cluster, replog):
    create(replog, cluster, "bad-client-headers")
    with Producer(bootstrap(cluster)) as producer:
        with pytest.raises(TypeError, match="a header key is a non-empty str"):
            producer.send("bad-client-headers", b"v", headers=[("", b"x")])
        with pytest.raises(TypeError, match="bytes or None, not str"):
            producer.send("bad-client-headers", b"v", headers={"k": "text"})


def test_log_append_time_takes_the_leaders_clock_on_every_replica(cluster, replog):
    create(replog, cluster, "appended", "message.timestamp.type=LogAppendTime")
    before_ms = int(time.time() * 1000)
    with Producer(bootstrap(cluster)) as producer:
        producer.send("appended", b"v", headers={"h": b"1"}, timestamp_ms=T0_MS).result(30)
    after_ms = int(time.time() * 1000)
    (record,) = read_all(cluster, "appended", 1)
    assert record.timestamp_type is TimestampType.LOG_APPEND_TIME and record.headers == (("h", b"1"),)
    assert before_ms - 1000 <= record.timestamp_ms <= after_ms + 1000  # the leader's clock, not T0
    # the followers validate the stamped batch as they append it, and so hold it only if it is well formed
    wait_caught_up(cluster, BROKERS, "appended", 1, LEADER_DEADLINE_S)


def test_a_change_of_message_timestamp_type_applies_to_the_running_partition(cluster, replog):
    create(replog, cluster, "switched")
    with Producer(bootstrap(cluster)) as producer:
        producer.send("switched", b"before", timestamp_ms=T0_MS).result(30)
        code, _, err = replog("topics", "alter", "switched", "--config", "message.timestamp.type=LogAppendTime")
        assert code == 0, err

        def stamped_by_leader():
            offset = producer.send("switched", b"after", timestamp_ms=T0_MS).result(30).offset
            found = [r for r in read_all(cluster, "switched", offset + 1) if r.offset == offset]
            return found and found[0].timestamp_type is TimestampType.LOG_APPEND_TIME

        wait_for(stamped_by_leader, CONFIG_DEADLINE_S, "the leader to stamp batches of 'switched' with its clock")
    first = read_all(cluster, "switched", 1)[0]
    assert (first.value, first.timestamp_ms, first.timestamp_type) == (b"before", T0_MS, TimestampType.CREATE_TIME)
    code, _, err = replog("topics", "alter", "switched", "--config", "message.timestamp.type=Now")
    assert code == 1 and "expected one of CreateTime, LogAppendTime" in err


def test_the_cli_produces_and_prints_headers_timestamps_and_encoded_values(cluster, replog, monkeypatch):
    create(replog, cluster, "cli-headers")
    lines = [
        json.dumps({"key": "k1", "value": "one", "headers": {"trace": "a"}, "timestamp_ms": T0_MS}),
        json.dumps({"value": "two", "headers": [{"key": "x", "value": None}], "timestamp_ms": T0_MS + 10}),
        json.dumps({"value": "three", "timestamp_ms": T0_MS + 20}),
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    code, _, err = replog("produce", "--topic", "cli-headers", "--input-format", "json", "--header", "src=cli")
    assert code == 0, err
    code, out, err = replog("consume", "--topic", "cli-headers", "--from-timestamp", str(T0_MS + 5),
                            "--print-timestamp", "--print-headers", "--print-key", "--value-format", "hex",
                            "--max-records", "2")
    assert code == 0, err
    assert out.splitlines() == [
        f"CreateTime:{T0_MS + 10}\tx:null,src:636c69\t\t74776f",
        f"CreateTime:{T0_MS + 20}\tsrc:636c69\t\t7468726565",
    ]
    code, out, err = replog("-o", "json", "consume", "--topic", "cli-headers", "--from-beginning",
                            "--max-records", "1", "--value-format", "base64")
    assert code == 0, err
    assert json.loads(out) == {"partition": 0, "offset": 0, "timestamp_ms": T0_MS, "timestamp_type": "CreateTime",
                               "key": "k1", "headers": [{"key": "trace", "value": "YQ=="},
                                                        {"key": "src", "value": "Y2xp"}], "value": "b25l"}


def test_the_cli_names_a_bad_input_line(cluster, replog, monkeypatch):
    create(replog, cluster, "cli-bad-lines")
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"value": "ok"}\n{"value": "v", "headers": {"": "x"}}\n'))
    code, _, err = replog("produce", "--topic", "cli-bad-lines", "--input-format", "json")
    assert code == 1 and "line 2: a header key must be a non-empty string" in err
    code, _, err = replog("produce", "--topic", "cli-bad-lines", "--header", "novalue")
    assert code == 1 and "expected KEY=VALUE" in err
    code, _, err = replog("consume", "--topic", "cli-bad-lines", "--from-timestamp", "yesterday")
    assert code == 1 and "expected milliseconds since the Unix epoch or an ISO 8601" in err


def grpcurl(cluster, address: str, method: str, request: dict) -> dict:
    binary = Path(sys.executable).parent / "grpcurl"
    done = subprocess.run([str(binary), *grpcurl_flags(cluster.operator_tls), "-d", json.dumps(request), address,
                           f"replog.v1.LogService/{method}"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_grpcurl_produces_and_fetches_a_record_with_headers_and_a_timestamp(cluster, replog):
    leader = create(replog, cluster, "polyglot-headers")
    address = cluster.processes[f"broker-{leader}"].address
    produced = grpcurl(cluster, address, "Produce", {"acks": -1, "partitions": [{
        "topic": "polyglot-headers", "records": [{
            "key": "a2V5", "value": "dmFsdWU=", "timestampMs": str(T0_MS),
            "headers": [{"key": "trace", "value": "dC0x"}, {"key": "none", "valueIsNull": True}]}]}]})
    # grpcurl prints proto field names, and leaves out fields at their defaults (error_code NONE)
    assert "error_code" not in produced["partitions"][0], produced
    fetched = grpcurl(cluster, address, "Fetch", {"maxWaitMs": 1000, "minBytes": 1, "decodeRecords": True,
                                                  "partitions": [{"topic": "polyglot-headers", "fetchOffset": 0}]})
    (record,) = fetched["partitions"][0]["decoded_records"]
    assert record["key"] == "a2V5" and record["value"] == "dmFsdWU=" and record["timestamp_ms"] == str(T0_MS)
    assert record["timestamp_type"] == "TIMESTAMP_TYPE_CREATE_TIME"
    assert record["headers"] == [{"key": "trace", "value": "dC0x"}, {"key": "none", "value_is_null": True}]


def test_the_broker_refuses_bad_decoded_headers_and_a_producer_claiming_log_append_time(cluster, replog):
    leader = create(replog, cluster, "refusals")
    stub = log_stub(cluster, leader)

    def produce(**data) -> log_pb2.ProducePartitionResponse:
        reply = stub.Produce(log_pb2.ProduceRequest(acks=1, partitions=[
            log_pb2.ProducePartitionData(topic="refusals", partition=0, **data)]), timeout=20)
        return reply.partitions[0]

    bad = produce(records=[common_pb2.Record(value=b"v", headers=[common_pb2.RecordHeader(key="", value=b"x")])])
    assert bad.error_code == common_pb2.ERROR_CODE_INVALID_REQUEST
    assert "bad record headers: a header key is a non-empty str" in bad.error_message
    too_many = produce(records=[common_pb2.Record(value=b"v", headers=[common_pb2.RecordHeader(key="k")] * 300)])
    assert too_many.error_code == common_pb2.ERROR_CODE_INVALID_REQUEST and "at most 256" in too_many.error_message
    batch = encode_batch([(None, b"v", T0_MS)])
    claimed, _ = with_log_append_time(batch, validate_batch(batch), T0_MS)
    refused = produce(record_batch=claimed)
    assert refused.error_code == common_pb2.ERROR_CODE_CORRUPT_RECORD
    assert "only the leader stamps one" in refused.error_message
    reply = stub.ListOffsets(log_pb2.ListOffsetsRequest(partitions=[log_pb2.ListOffsetsPartition(
        topic="refusals", partition=0, spec=log_pb2.OFFSET_SPEC_LATEST)]), timeout=10)
    assert reply.partitions[0].offset == 0  # nothing was appended
