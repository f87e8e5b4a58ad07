"""One failed log directory of several (issue 40): real brokers; broker 1 keeps two log directories, the
second on the power-loss filesystem (tests/fault/powerloss/), which on command fails every write (EIO),
fails every fsync (EIO, with an fsync per append), refuses to grow (a full disk:
ENOSPC) or stalls every fsync (the broker's probe gives up on it).

Broker 1 leads four partitions replicated on three brokers (min.insync.replicas=2), two in each of its
directories, and has acknowledged records in all of them; acks=all produce to the second directory's
partitions goes on throughout. Then the second directory's disk fails. Broker 1 stays up: it refuses
produce to the partitions there with STORAGE_ERROR, the controller moves their leadership to brokers 2
and 3 and drops broker 1 from their ISR, while broker 1 keeps leading and taking acks=all produce for
the partitions in its first directory. Every acknowledged record reads back, and
`replog cluster describe` and the broker's metrics show the offline directory.
"""

from __future__ import annotations

import contextlib
import threading

import grpc
import pytest

from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2
from tests.fault.log_dir_helpers import describe, in_order_within, log_dir_online, read_back
from tests.fault.powerloss.control import powerloss_mount
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    partition_state,
    produce_raw,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

BROKERS = (1, 2, 3)
PARTITIONS = 4
BATCHES = 5
STALL_MAX_MS = 5000  # the broker's fsync probe: above the real disk's worst under load, below the FUSE stall
FAULTS = {  # the topic's configs, and how the disk fails
    "write fails": ({}, lambda disk: disk.faults(write_error=True)),
    "fsync fails": ({"flush.messages": "1"}, lambda disk: disk.faults(fsync_error=True)),  # an fsync per append
    "disk full": ({}, lambda disk: disk.faults(space_bytes_max=disk.stats()["used_bytes"])),
    "fsync stalls": ({}, lambda disk: disk.faults(fsync_stall_s=120.0)),  # lifted (and returning) at teardown
}


@pytest.fixture
def two_dir_cluster(cluster_factory, tmp_path):
    """A cluster whose brokers keep two log directories each, broker 1's second on a power-loss mount."""
    # built here, not at import: its certificates come from the session's CA, which the CLI trusts
    spec = ClusterSpec(controllers=1, gateways=1, zookeeper_session_timeout_ms=4000, broker_log_dirs=2,
                       extra_args={"broker": ["--log-dir-fsync-stall-max-ms", str(STALL_MAX_MS)]})
    cluster = cluster_factory(spec, start=False)
    failing_dir = cluster.broker_log_dirs("broker-1", 2)[1]
    with contextlib.ExitStack() as stack:
        disk = stack.enter_context(powerloss_mount(tmp_path / "backing", failing_dir))
        try:
            cluster.up()
            yield cluster, disk, failing_dir
        finally:
            disk.faults()  # a clean unmount
            for broker_id in BROKERS:
                cluster.kill(f"broker-{broker_id}")
            cluster.down()


def produce_meanwhile(cluster, zk, topic: str, partitions: list[int], acknowledged: dict, stop: threading.Event):
    """acks=all produce to the current leader of each partition, in turns, until `stop`; what is acknowledged
    is noted, what is refused or lost in transit is not (and need not be in the log)."""
    index = 0
    while not stop.is_set():
        for partition in partitions:
            state = partition_state(zk, topic, partition)
            if state is None or state.leader not in BROKERS:
                continue
            value = f"during-{partition}-{index}".encode()
            try:
                answer = produce_raw(cluster, state.leader, topic, batch_of([value]), acks=-1, partition=partition,
                                     timeout_ms=5_000)
            except grpc.RpcError:
                continue
            if answer.error_code == common_pb2.ERROR_CODE_NONE:
                acknowledged[partition].append(value)
        index += 1


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failed_directory_goes_offline_alone_and_the_broker_keeps_serving_the_other(two_dir_cluster, capsys, fault):
    cluster, disk, failing_dir = two_dir_cluster
    topic = "spread"
    with zk_session(cluster) as zk:
        topic_config, fail = FAULTS[fault]
        create_topic(zk, topic, {p: BROKERS for p in range(PARTITIONS)}, {"min.insync.replicas": "2", **topic_config})
        for partition in range(PARTITIONS):
            wait_for_leader(cluster, zk, topic, 1, 30, partition=partition, followers=(2, 3))
            wait_for_isr(cluster, zk, topic, set(BROKERS), 30, partition=partition)
        on_failing = [p for p in range(PARTITIONS) if (failing_dir / f"{topic}-{p}").is_dir()]
        kept = [p for p in range(PARTITIONS) if p not in on_failing]
        assert len(on_failing) == 2 and len(kept) == 2, "new replicas go to the directory with fewer"

        acknowledged = {p: [] for p in range(PARTITIONS)}
        for index in range(BATCHES):
            for partition in range(PARTITIONS):
                value = f"before-{partition}-{index}".encode()
                answer = produce_raw(cluster, 1, topic, batch_of([value]), acks=-1, partition=partition)
                assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
                acknowledged[partition].append(value)

        stop = threading.Event()
        producer = threading.Thread(target=produce_meanwhile,
                                    args=(cluster, zk, topic, on_failing, acknowledged, stop), daemon=True)
        producer.start()
        try:
            wait_for(lambda: all(len(acknowledged[p]) > BATCHES for p in on_failing), 30,
                     "produce to go on while the disk still works")
            fail(disk)
            for partition in on_failing:  # leadership moves, and broker 1 leaves the ISR
                wait_for(lambda: (s := partition_state(zk, topic, partition)) and s.leader in (2, 3)
                         and 1 not in s.isr, 60, f"{topic}-{partition} to move off broker 1")
            taken = {p: len(acknowledged[p]) for p in on_failing}
            wait_for(lambda: all(len(acknowledged[p]) > taken[p] for p in on_failing), 30,
                     "the new leaders to acknowledge produce")
        finally:
            stop.set()
            producer.join(30)
        assert not producer.is_alive()
        assert cluster.is_running("broker-1"), "broker 1 halted although its first directory is online"
        refused = produce_raw(cluster, 1, topic, batch_of([b"refused"]), acks=-1, partition=on_failing[0])
        assert refused.error_code != common_pb2.ERROR_CODE_NONE, refused  # no longer its leader

        for partition in kept:  # broker 1 still leads these and takes acks=all produce
            assert partition_state(zk, topic, partition).leader == 1
            value = f"after-{partition}".encode()
            answer = produce_raw(cluster, 1, topic, batch_of([value]), acks=-1, partition=partition)
            assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
            acknowledged[partition].append(value)
        for partition in on_failing:
            leader = partition_state(zk, topic, partition).leader
            wait_for_leader(cluster, zk, topic, leader, 30, partition=partition)
            value = f"after-{partition}".encode()
            answer = produce_raw(cluster, leader, topic, batch_of([value]), acks=-1, partition=partition)
            assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
            acknowledged[partition].append(value)

        for partition in range(PARTITIONS):
            committed = read_back(cluster, zk, topic, partition, BROKERS)
            # a batch whose answer was lost (a timeout, a refused connection) may be there too: never one
            # that was acknowledged missing, nor out of order
            assert in_order_within(acknowledged[partition], committed), \
                f"{topic}-{partition}: an acknowledged record was lost: {acknowledged[partition]} vs {committed}"
            assert b"refused" not in committed

        broker_1 = next(b for b in describe(cluster, capsys)["brokers"] if b["broker_id"] == 1)
        assert broker_1["alive"]
        assert broker_1["log_dirs"] == [{"path": str(d), "offline": d == failing_dir}
                                        for d in cluster.broker_log_dirs("broker-1", 2)]
        assert log_dir_online(cluster, 1, failing_dir) == 0
        assert log_dir_online(cluster, 1, cluster.broker_log_dirs("broker-1", 2)[0]) == 1
