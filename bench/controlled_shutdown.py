"""Controlled shutdown benchmark: a broker leading a third of the partitions asks
the controller to move its leaderships away; `seconds` is from the request to
the reply, which the controller sends once the new states are written and every
broker has acknowledged its LeaderAndIsr.

    .venv/bin/python bench/controlled_shutdown.py --partitions 10000

The request is sent exactly as the broker sends it on SIGTERM (ControllerService.
ControlledShutdown with its id and broker epoch). floor_zk_multi_s is the raw
ZooKeeper cost of the same number of state writes, measured in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from replog.common.zk import schema  # noqa: E402
from replog.common.zk.client import ZkClient  # noqa: E402
from replog.devcluster import ClusterSpec  # noqa: E402
from replog.v1 import controller_pb2, controller_pb2_grpc  # noqa: E402

TOPIC = "shutdown-bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10000)
    args = parser.parse_args()
    spec = ClusterSpec(controllers=1, brokers=3, gateways=1)
    with harness.local_cluster(spec) as cluster:
        zk = ZkClient(cluster.zookeeper_connect)
        zk.start()
        harness.note(f"creating {args.partitions} partitions")
        harness.create_topic(zk, TOPIC, harness.rotating_assignment(args.partitions, [1, 2, 3], 3))
        harness.wait_until(lambda: all(s is not None and len(s.isr) == 3 for s in
                                       harness.read_states(cluster.zookeeper_connect, TOPIC, args.partitions)),
                           600, "every partition state")
        harness.wait_until(lambda: all(harness.hosted(p.address) >= args.partitions for p in cluster.of_role("broker")),
                           600, "every broker to host its replicas", interval_s=1)
        states = harness.read_states(cluster.zookeeper_connect, TOPIC, args.partitions)
        led = sum(1 for s in states if s.leader == 1)
        floor_s = harness.zk_multi_floor_s(zk, led)
        _, stat = zk.kazoo.get(schema.broker_path(1))
        record = schema.ControllerRecord.decode(zk.get(schema.CONTROLLER)[0])
        stub = controller_pb2_grpc.ControllerServiceStub(grpc.insecure_channel(f"{record.host}:{record.port}"))
        harness.note(f"broker 1 leads {led} partitions; asking for a controlled shutdown")
        started = time.monotonic()
        reply = stub.ControlledShutdown(controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=stat.czxid),
                                        timeout=120)
        seconds = time.monotonic() - started
        after = harness.read_states(cluster.zookeeper_connect, TOPIC, args.partitions)
        still = sum(1 for s in after if s.leader == 1)
        result = {
            "partitions": args.partitions,
            "leaders_moved": led - still,
            "remaining_partitions": len(reply.remaining_partitions),
            "error_code": reply.error_code,
            "seconds": round(seconds, 3),
            "floor_zk_multi_s": round(floor_s, 4),
        }
        zk.stop()
    harness.emit(result)


if __name__ == "__main__":
    main()
