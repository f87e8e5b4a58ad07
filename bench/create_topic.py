"""Topic creation of many partitions in one request.

    .venv/bin/python bench/create_topic.py --partitions 50000
    .venv/bin/python bench/create_topic.py --partitions 100000 --topics 2 --via kafka

Starts a local cluster (ZooKeeper, one controller, three brokers, one gateway) and creates
`--partitions` partitions in `--topics` topics of equal size (RF `--replication-factor`, placed by
the product). `--via gateway`: the gateway's CreateTopic, one request per topic (a topic holds at most
50,000 partitions, and its assignment must fit one ZooKeeper request). `--via kafka`: ONE Kafka
CreateTopics request naming every topic, to a broker's Kafka listener (confluent-kafka's
AdminClient), which answers once every leader is elected. Reported, each from the moment the first
request was sent:
- answered_s: the last answer came (gateway: every topic's config and assignment are in ZooKeeper;
  Kafka: its leaders are elected too);
- states_s: every partition has its state znode (the controller created them: leaders chosen);
- hosted_s: every broker hosts each replica assigned to it (DescribeReplicas).
The load average before and after is reported with the figures.

floor_zk_create_s is the ZooKeeper work alone, in the same run: the same znodes (the topic's config
and assignment, its partitions znode, a znode and a state znode per partition, each state the bytes
the controller writes) created under another root in pipelined `multi`s of 1,000 operations on one
session, as the controller writes them. The last line of standard output is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.common.security import local  # noqa: E402
from replog.common.zk import bulk, schema  # noqa: E402
from replog.common.zk import multi_writer as mw  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import admin_pb2, admin_pb2_grpc  # noqa: E402

TOPIC = "create-topic-bench"  # the floor's znodes are named after it
FLOOR_ROOT = "/bench-create-floor"


def zk_create_floor_s(cluster, names: list[str], per_topic: int, replication_factor: int) -> float:
    """Seconds to create the znodes of topics `names` of `per_topic` partitions, in pipelined multis of
    1,000 operations on one session, under a root of their own (each znode with the ACL its real path gets)."""
    endpoint = cluster.zookeeper_endpoint
    zk = ZkClient(endpoint)
    zk.start()
    try:
        zk.kazoo.ensure_path(FLOOR_ROOT)
    finally:
        zk.stop()
    assignment = harness.rotating_assignment(per_topic, [1, 2, 3], replication_factor)
    batches: list[list[mw.Operation]] = []
    for name in names:
        top = f"{FLOOR_ROOT}/{name}"
        batches.append([
            mw.Create(top, schema.TopicAssignment(assignment).encode(), endpoint.acl(schema.topic_path(name))),
            mw.Create(f"{top}-config", schema.TopicConfigRecord({}).encode(), endpoint.acl(schema.topic_config_path(name))),
            mw.Create(f"{top}/partitions", b"", endpoint.acl(schema.partitions_path(name))),
        ])
        ops: list[mw.Operation] = []
        for p in range(per_topic):
            state = schema.PartitionStateRecord(assignment[p][0], 0, assignment[p], 1).encode()
            ops.append(mw.Create(f"{top}/partitions/{p}", b"", endpoint.acl(schema.partition_path(name, p))))
            ops.append(mw.Create(f"{top}/partitions/{p}/state", state, endpoint.acl(schema.partition_state_path(name, p))))
        batches += [ops[i:i + 1000] for i in range(0, len(ops), 1000)]
    writer = mw.MultiWriter(endpoint, session_timeout_s=30)
    try:
        started = time.monotonic()
        outcomes = writer.commit(batches)
        took = time.monotonic() - started
    finally:
        writer.close()
    failed = [o for o in outcomes if any(code != mw.OK for code in o)]
    assert not failed, f"{len(failed)} floor transactions failed"
    return took


def kafka_create(cluster, names: list[str], per_topic: int, rf: int, timeout_s: float) -> dict[int, int]:
    """One CreateTopics request for every topic in `names`; the replicas each broker got."""
    from confluent_kafka.admin import AdminClient, NewTopic

    env = {"security.protocol": "ssl", "ssl.ca.location": os.environ[local.ENV_CA],
           "ssl.certificate.location": os.environ[local.ENV_CERT], "ssl.key.location": os.environ[local.ENV_KEY]}
    broker = cluster.of_role("broker")[0]
    client = AdminClient({"bootstrap.servers": f"{broker.host}:{broker.kafka_port}", **env,
                          "socket.timeout.ms": min(int(timeout_s * 1000), 300000)})
    futures = client.create_topics([NewTopic(name, per_topic, rf) for name in names],
                                   operation_timeout=timeout_s, request_timeout=timeout_s)
    for name, future in futures.items():
        future.result(timeout=timeout_s)
    per_broker: dict[int, int] = {}
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        for name in names:
            assignment = schema.TopicAssignment.decode(name, zk.kazoo.get(schema.topic_path(name))[0])
            for replicas in assignment.partitions.values():
                for b in replicas:
                    per_broker[b] = per_broker.get(b, 0) + 1
    finally:
        zk.stop()
    return per_broker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=100000)
    parser.add_argument("--topics", type=int, default=1)
    parser.add_argument("--via", choices=("gateway", "kafka"), default="gateway")
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--timeout-s", type=float, default=1800)
    args = parser.parse_args()
    n, rf = args.partitions, args.replication_factor
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1,
                       zookeeper_heap_mb=512 + n * 3 // 1024, zookeeper_session_timeout_ms=10000)
    with harness.local_cluster(spec) as cluster:
        channels = harness.channels(cluster)
        admin = admin_pb2_grpc.AdminServiceStub(channels.get(cluster.gateway_address))
        per_topic = n // args.topics
        names = [f"{TOPIC}-{i}" for i in range(args.topics)]
        states = [schema.partition_state_path(t, p) for t in names for p in range(per_topic)]
        load_before = Path("/proc/loadavg").read_text().split()[0]
        harness.note(f"creating {per_topic * args.topics} partitions in {args.topics} topic(s), RF {rf}, via {args.via}")
        started = time.monotonic()
        if args.via == "gateway":
            per_broker: dict[int, int] = {}
            for name in names:
                answer = admin.CreateTopic(admin_pb2.CreateTopicRequest(name=name, partitions=per_topic,
                                                                        replication_factor=rf), timeout=args.timeout_s)
                assert len(answer.assignment) == per_topic, len(answer.assignment)
                for entry in answer.assignment:
                    for broker in entry.replicas:
                        per_broker[broker] = per_broker.get(broker, 0) + 1
        else:
            per_broker = kafka_create(cluster, names, per_topic, rf, args.timeout_s)
        answered_s = time.monotonic() - started
        harness.note(f"answered after {answered_s:.1f} s; waiting for the partition states")

        def partition_count(name: str) -> int:
            zk = ZkClient(cluster.zookeeper_endpoint)
            zk.start()
            try:
                return len(zk.kazoo.get_children(schema.partitions_path(name)))
            except Exception:  # noqa: BLE001 - the partitions znode may not exist yet
                return 0
            finally:
                zk.stop()

        # The partitions znode's children first (one cheap read a poll), then every state znode once.
        harness.wait_until(lambda: all(partition_count(t) >= per_topic for t in names), args.timeout_s,
                           "the partition znodes", interval_s=0.5)
        harness.wait_until(lambda: all(bulk.get_many(cluster.zookeeper_endpoint, states)), args.timeout_s,
                           "every partition state", interval_s=0.5)
        states_s = time.monotonic() - started
        harness.note(f"states after {states_s:.1f} s; waiting for the brokers to host their replicas")
        harness.wait_until(lambda: all(harness.hosted(p.address) >= per_broker.get(p.instance_id, 0)
                                       for p in cluster.of_role("broker")),
                           args.timeout_s, "every broker to host its replicas", interval_s=2)
        hosted_s = time.monotonic() - started
        load_after = Path("/proc/loadavg").read_text().split()[0]
        channels.close()
        harness.note("measuring the ZooKeeper floor")
        floor_s = zk_create_floor_s(cluster, names, per_topic, rf)
    harness.emit({
        "partitions": per_topic * args.topics,
        "topics": args.topics,
        "via": args.via,
        "replication_factor": rf,
        "answered_s": round(answered_s, 3),
        "states_s": round(states_s, 3),
        "hosted_s": round(hosted_s, 3),
        "floor_zk_create_s": round(floor_s, 3),
        "loadavg_before_after": [float(load_before), float(load_after)],
    })


if __name__ == "__main__":
    main()
