"""The client resumes by itself after a broker goes away (issue 36): no `flush()`, no new client.

- After a retry (its leader stopped, leadership moved), the producer goes on sending the
  partition's new records as they come, not only when a flush or a full batch pushes them.
"""

from __future__ import annotations

import pytest

from replog.client import Producer
from replog.devcluster import ClusterSpec

from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    start_cluster,
    create_topic,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault


def bootstrap(cluster) -> list[str]:
    return [p.address for p in cluster.of_role("broker")]


def test_producer_keeps_sending_a_partition_after_a_retry_without_a_flush(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, brokers=2, gateways=0))
    with zk_session(cluster) as zk:
        create_topic(zk, "moved", {0: (1, 2)})
        wait_for_isr(cluster, zk, "moved", {1, 2}, 30)
        with Producer(bootstrap(cluster)) as producer:
            assert producer.send("moved", b"before", partition=0).result(timeout=20).offset == 0
            # A controlled shutdown moves leadership to broker 2; the producer still names broker 1,
            # so its next record fails there and is retried at broker 2.
            cluster.stop("broker-1")
            wait_for_leader(cluster, zk, "moved", 2, 30)
            assert producer.send("moved", b"retried", partition=0).result(timeout=20).offset == 1
            for i in range(20):
                future = producer.send("moved", b"after-%d" % i, partition=0)
                # One at a time, so none fills a batch: each must leave on its own linger.
                wait_for(future.done, 10, f"record {i} after the retry to be acknowledged")
                assert future.result().offset == 2 + i
