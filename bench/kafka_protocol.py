"""Benchmark: Kafka clients through the brokers' Kafka listeners, beside replog's own client.

    .venv/bin/python bench/kafka_protocol.py
    .venv/bin/python bench/kafka_protocol.py --records 500000 --compression zstd

Starts its own local cluster (ZooKeeper, one controller, three brokers, TLS) and two topics of 6
partitions, RF 3, min.insync.replicas 2; `--record-bytes` (100) random values, acks=all,
idempotent producers. One JSON object:

- kafka_producer_records_per_s: confluent-kafka's Producer (librdkafka) sending `--records` records
  through the Kafka listeners, then flush(); native_producer_records_per_s: replog's Producer
  (`send` in a loop, then flush) over gRPC, the same records, same run.
- kafka_consumer_records_per_s: confluent-kafka's Consumer, assigned every partition from offset 0,
  until it has read them all; native_consumer_records_per_s: replog's Consumer over the same.
- floor_translate_in_records_per_s / floor_translate_out_records_per_s: the listener's record
  translation alone (broker/kafka/records.py: Kafka's varint batch to replog's, and back), in this
  process on one core, over batches of librdkafka's usual size (`--batch-records`). A broker's
  listener cannot move records faster than these, whatever the network and the log do.
- cpu_s: CPU seconds each process used in the whole run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from confluent_kafka import Consumer as KafkaConsumer  # noqa: E402
from confluent_kafka import Producer as KafkaProducer  # noqa: E402
from confluent_kafka import TopicPartition as KafkaTopicPartition  # noqa: E402

from replog.broker.kafka.records import to_kafka, to_replog  # noqa: E402
from replog.client import Consumer, Producer  # noqa: E402
from replog.common.records import CODECS, with_offset_and_epoch  # noqa: E402
from replog.common.security import local  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402

PARTITIONS = 6
KAFKA_TOPIC, NATIVE_TOPIC = "kafka-bench", "native-bench"
DEADLINE_S = 300.0


def create_topics(cluster) -> None:
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        for topic in (KAFKA_TOPIC, NATIVE_TOPIC):
            harness.create_topic(zk, topic, harness.rotating_assignment(PARTITIONS, [1, 2, 3], 3),
                                 {"min.insync.replicas": "2"})
    finally:
        zk.stop()
    for topic in (KAFKA_TOPIC, NATIVE_TOPIC):
        harness.wait_until(lambda: all(s is not None and s.leader >= 0 and len(s.isr) == 3
                                       for s in harness.read_states(cluster.zookeeper_endpoint, topic, PARTITIONS)),
                           60, f"leaders of {topic}")


def tls() -> dict:
    return {"security.protocol": "ssl", "ssl.ca.location": os.environ[local.ENV_CA],
            "ssl.certificate.location": os.environ[local.ENV_CERT], "ssl.key.location": os.environ[local.ENV_KEY]}


def kafka_produce(bootstrap: str, values: list[bytes], compression: str) -> float:
    producer = KafkaProducer({"bootstrap.servers": bootstrap, **tls(), "enable.idempotence": True, "acks": "all",
                              "linger.ms": 5, "compression.type": compression, "queue.buffering.max.messages": 1000000})
    failed = []
    started = time.perf_counter()
    for value in values:
        while True:
            try:
                producer.produce(KAFKA_TOPIC, value, on_delivery=lambda e, m: e and failed.append(e))
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(DEADLINE_S):
        raise RuntimeError("confluent-kafka left records unsent")
    elapsed = time.perf_counter() - started
    if failed:
        raise RuntimeError(f"{len(failed)} deliveries failed: {failed[:3]}")
    return len(values) / elapsed


def native_produce(bootstrap: list[str], values: list[bytes], compression: str) -> float:
    with Producer(bootstrap, compression_type=compression) as producer:
        started = time.perf_counter()
        for value in values:
            producer.send(NATIVE_TOPIC, value)
        producer.flush(DEADLINE_S)
        return len(values) / (time.perf_counter() - started)


def kafka_consume(bootstrap: str, total: int) -> float:
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, **tls(), "group.id": "bench",
                              "enable.auto.commit": False, "fetch.max.bytes": 8 * 1024 * 1024})
    try:
        consumer.assign([KafkaTopicPartition(KAFKA_TOPIC, p, 0) for p in range(PARTITIONS)])
        started = time.perf_counter()
        seen = 0
        while seen < total:
            if time.perf_counter() - started > DEADLINE_S:
                raise RuntimeError(f"confluent-kafka read {seen} of {total}")
            for message in consumer.consume(10000, 1.0):
                if message.error() is None:
                    seen += 1
        return total / (time.perf_counter() - started)
    finally:
        consumer.close()


def native_consume(bootstrap: list[str], total: int) -> float:
    with Consumer(bootstrap, NATIVE_TOPIC) as consumer:
        started = time.perf_counter()
        seen = 0
        for _ in consumer:
            seen += 1
            if seen == total:
                break
        return total / (time.perf_counter() - started)


def floor_translate(values: list[bytes], batch_records: int, compression: str) -> tuple[float, float]:
    """Records per second through records.py alone, in and out, on batches of `batch_records`."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    codec = CODECS[compression]
    batches = []
    for start in range(0, len(values), batch_records):
        builder = DefaultRecordBatchBuilder(2, codec, False, 1, 0, start, 1 << 24)
        for offset, value in enumerate(values[start:start + batch_records]):
            builder.append(offset, int(time.time() * 1000), None, value, [])
        batches.append(bytes(builder.build()))
    started = time.perf_counter()
    stored = [with_offset_and_epoch(to_replog(batch), 0, 1) for batch in batches]
    translate_in = len(values) / (time.perf_counter() - started)
    started = time.perf_counter()
    for batch in stored:
        to_kafka(batch)
    translate_out = len(values) / (time.perf_counter() - started)
    return translate_in, translate_out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--compression", default="none", choices=sorted(CODECS))
    parser.add_argument("--batch-records", type=int, default=1000, help="records per batch of the translation floor")
    args = parser.parse_args()
    values = [os.urandom(args.record_bytes) for _ in range(args.records)]
    result = {"records": args.records, "record_bytes": args.record_bytes, "compression": args.compression}
    result["floor_translate_in_records_per_s"], result["floor_translate_out_records_per_s"] = (
        round(x) for x in floor_translate(values[:50_000], args.batch_records, args.compression))
    with harness.local_cluster(ClusterSpec(controllers=1, brokers=3, gateways=0)) as cluster:
        create_topics(cluster)
        kafka_bootstrap = ",".join(f"{p.host}:{p.kafka_port}" for p in cluster.of_role("broker"))
        grpc_bootstrap = [p.address for p in cluster.of_role("broker")]
        before = harness.cpu_by_process(cluster, "bench")
        harness.note("confluent-kafka producing")
        result["kafka_producer_records_per_s"] = round(kafka_produce(kafka_bootstrap, values, args.compression))
        harness.note("replog producing")
        result["native_producer_records_per_s"] = round(native_produce(grpc_bootstrap, values, args.compression))
        harness.note("confluent-kafka consuming")
        result["kafka_consumer_records_per_s"] = round(kafka_consume(kafka_bootstrap, args.records))
        harness.note("replog consuming")
        result["native_consumer_records_per_s"] = round(native_consume(grpc_bootstrap, args.records))
        result["cpu_s"] = harness.cpu_used(before, harness.cpu_by_process(cluster, "bench"))
    harness.emit(result)


if __name__ == "__main__":
    main()
