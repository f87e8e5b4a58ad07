"""A storage error is final for the log directory (issue 40): real brokers, broker 1's log directory on
the power-loss filesystem (tests/fault/powerloss/), which fails on command.

Broker 1 leads a partition replicated on three brokers (min.insync.replicas=2) and has acknowledged
records. Then its disk fails: an fsync answers EIO (the durable mode fsyncs every append), a write
answers EIO, or the disk is full (ENOSPC). The next produce is refused with STORAGE_ERROR, not
retried; broker 1 takes its only log directory offline, says so, ends its ZooKeeper session and
exits; the controller moves leadership to another replica, which holds every acknowledged record and
takes new ones.

A disk that is nearly full (broker 1's log directory on a 32 MiB tmpfs, 16 MiB reserve) refuses produce
with STORAGE_ERROR naming the reserve before any write fails, keeps leading, and takes produce again once
space is freed.

A stalled disk (every fsync hangs) is found by the broker's fsync probe within
`log_dir_fsync_stall_max_ms` and handled as a failed one: leadership moves, nothing acknowledged is lost.
"""

from __future__ import annotations

import contextlib
import subprocess

import pytest

from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2
from tests.fault.powerloss.control import powerloss_mount
from tests.fault.test_power_loss import committed_values
from tests.integration.broker_helpers import (
    batch_of,
    create_topic,
    partition_state,
    produce_raw,
    wait_caught_up,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

BROKERS = (1, 2, 3)
BATCHES = 10
SPEC = ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=4000)

FAILURES = {
    "fsync fails": ({"flush.messages": "1"}, lambda disk: disk.faults(fsync_error=True)),
    "write fails": ({}, lambda disk: disk.faults(write_error=True)),
    "disk full": ({}, lambda disk: disk.faults(space_bytes_max=disk.stats()["used_bytes"])),
}


@pytest.fixture
def failing_disk_cluster(cluster_factory, tmp_path):
    """A cluster whose broker 1 keeps its log directory on a power-loss mount; (cluster, disk)."""
    cluster = cluster_factory(SPEC, start=False)
    with contextlib.ExitStack() as stack:
        disk = stack.enter_context(powerloss_mount(tmp_path / "backing", cluster.data_dir("broker-1")))
        try:
            cluster.up()
            yield cluster, disk
        finally:
            disk.faults()  # a clean unmount
            for broker_id in BROKERS:
                cluster.kill(f"broker-{broker_id}")
            cluster.down()


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failed_disk_takes_its_directory_offline_and_leadership_moves_losing_nothing(failing_disk_cluster,
                                                                                      failure):
    cluster, disk = failing_disk_cluster
    topic_config, fail = FAILURES[failure]
    topic = "disk"
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {0: BROKERS}, {"min.insync.replicas": "2", **topic_config})
        wait_for_leader(cluster, zk, topic, 1, 30, followers=(2, 3))
        wait_for_isr(cluster, zk, topic, set(BROKERS), 30)
        acknowledged = []
        for index in range(BATCHES):
            value = f"before-{index}".encode()
            answer = produce_raw(cluster, 1, topic, batch_of([value]), acks=-1)
            assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
            acknowledged.append(value)
        wait_caught_up(cluster, BROKERS, topic, len(acknowledged), 30)

        fail(disk)
        answer = produce_raw(cluster, 1, topic, batch_of([b"refused"]), acks=-1)
        assert answer.error_code == common_pb2.ERROR_CODE_STORAGE_ERROR, answer
        assert "offline" in answer.error_message, answer

        wait_for(lambda: not cluster.is_running("broker-1"), 30, "broker 1 to stop")
        log_text = cluster.log_path("broker-1").read_text()
        assert "is offline" in log_text and "exit code 3" in log_text
        state = wait_for(lambda: (s := partition_state(zk, topic)) and s.leader in (2, 3) and s, 30,
                         "a new leader among brokers 2 and 3")
        wait_for_leader(cluster, zk, topic, state.leader, 30)

        committed = committed_values(cluster, zk, topic)
        assert committed[: len(acknowledged)] == acknowledged, "an acknowledged record was lost"
        assert b"refused" not in committed  # the refused batch was never replicated nor acknowledged

        wait_for(lambda: 1 not in partition_state(zk, topic).isr, 60, "the ISR to drop broker 1")
        after = produce_raw(cluster, state.leader, topic, batch_of([b"after"]), acks=-1)
        assert after.error_code == common_pb2.ERROR_CODE_NONE, after


TMPFS_BYTES = 32 * 1024 * 1024
RESERVE_BYTES = 16 * 1024 * 1024
RESERVE_SPEC = ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=4000,
                           extra_args={"broker": ["--log-dir-free-bytes-min", str(RESERVE_BYTES)]})


@pytest.fixture
def small_disk_cluster(cluster_factory):
    """A cluster whose broker 1 keeps its log directory on a 32 MiB tmpfs; the brokers keep 16 MiB free."""
    cluster = cluster_factory(RESERVE_SPEC, start=False)
    directory = cluster.data_dir("broker-1")
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(directory)], check=True)
    try:
        cluster.up()
        yield cluster, directory
    finally:
        for broker_id in BROKERS:
            cluster.kill(f"broker-{broker_id}")
        cluster.down()
        subprocess.run(["umount", "-l", str(directory)], check=False)


def test_a_disk_nearly_full_refuses_produce_before_any_write_fails(small_disk_cluster):
    cluster, directory = small_disk_cluster
    topic = "reserve"
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {0: BROKERS}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, topic, 1, 30, followers=(2, 3))
        wait_for_isr(cluster, zk, topic, set(BROKERS), 30)
        first = produce_raw(cluster, 1, topic, batch_of([b"before"]), acks=-1)
        assert first.error_code == common_pb2.ERROR_CODE_NONE, first

        filler = directory / "filler"  # something else fills the disk: free space drops below the reserve
        filler.write_bytes(b"\0" * (TMPFS_BYTES - RESERVE_BYTES + 1024 * 1024))
        refused = wait_for(lambda: (a := produce_raw(cluster, 1, topic, batch_of([b"refused"]), acks=-1))
                           .error_code != common_pb2.ERROR_CODE_NONE and a, 30, "produce to be refused")
        assert refused.error_code == common_pb2.ERROR_CODE_STORAGE_ERROR, refused
        assert "below the reserve" in refused.error_message and "log_dir_free_bytes_min" in refused.error_message
        assert cluster.is_running("broker-1")  # nothing failed: the broker keeps leading and serving
        assert partition_state(zk, topic).leader == 1

        filler.unlink()
        taken = wait_for(lambda: (a := produce_raw(cluster, 1, topic, batch_of([b"after"]), acks=-1))
                         .error_code == common_pb2.ERROR_CODE_NONE and a, 30, "produce to be taken again")
        assert taken.error_code == common_pb2.ERROR_CODE_NONE
        wait_caught_up(cluster, BROKERS, topic, taken.base_offset + 1, 30)
        committed = committed_values(cluster, zk, topic)
    assert committed[0] == b"before" and committed[-1] == b"after"


STALL_MAX_MS = 2000
STALL_SPEC = ClusterSpec(controllers=1, gateways=0, zookeeper_session_timeout_ms=4000,
                         extra_args={"broker": ["--log-dir-fsync-stall-max-ms", str(STALL_MAX_MS)]})


@pytest.fixture
def stalling_disk_cluster(cluster_factory, tmp_path):
    cluster = cluster_factory(STALL_SPEC, start=False)
    with contextlib.ExitStack() as stack:
        disk = stack.enter_context(powerloss_mount(tmp_path / "backing", cluster.data_dir("broker-1")))
        try:
            cluster.up()
            yield cluster, disk
        finally:
            disk.faults()
            for broker_id in BROKERS:
                cluster.kill(f"broker-{broker_id}")
            cluster.down()


def test_a_stalled_fsync_takes_the_directory_offline_and_leadership_moves(stalling_disk_cluster):
    cluster, disk = stalling_disk_cluster
    topic = "stall"
    with zk_session(cluster) as zk:
        create_topic(zk, topic, {0: BROKERS}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, topic, 1, 30, followers=(2, 3))
        wait_for_isr(cluster, zk, topic, set(BROKERS), 30)
        acknowledged = []
        for index in range(BATCHES):
            value = f"before-{index}".encode()
            answer = produce_raw(cluster, 1, topic, batch_of([value]), acks=-1)
            assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
            acknowledged.append(value)
        wait_caught_up(cluster, BROKERS, topic, len(acknowledged), 30)

        disk.faults(fsync_stall_s=20.0)  # every fsync on broker 1's disk hangs for 20 s

        state = wait_for(lambda: (s := partition_state(zk, topic)) and s.leader in (2, 3) and s, 30,
                         "a new leader among brokers 2 and 3")
        wait_for_leader(cluster, zk, topic, state.leader, 30)
        assert "did not return within" in cluster.log_path("broker-1").read_text()
        committed = committed_values(cluster, zk, topic)
        assert committed[: len(acknowledged)] == acknowledged, "an acknowledged record was lost"
        disk.faults()  # the stalled fsyncs return; broker 1 finishes exiting
        wait_for(lambda: not cluster.is_running("broker-1"), 90, "broker 1 to stop")
