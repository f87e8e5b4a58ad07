"""Running out of file descriptors is not a storage error (logdirs/log_dir_failures.py).

An EMFILE comes from an open that failed: nothing was written. The append is answered with a
retriable STORAGE_ERROR that says so, the follower and the checkpointer try again, the directory stays
online, and the shortage is counted. A real storage error (EIO, ENOSPC) still takes it offline.
"""

from __future__ import annotations

import errno
from pathlib import Path

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.core.errors import ErrorCode
from replog.broker.log import RECOVERY_POINT_CHECKPOINT_FILE, LogConfig, read_offsets_checkpoint
from replog.broker.maintenance.checkpointer import Checkpointer
from replog.broker.replicas.leader_side import append_produced
from replog.broker.logdirs.log_dir_failures import LogDirFailures
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.common.clock import ManualClock
from replog.common.core.partitions import TopicPartition
from replog.common.records import encode_batch, validate_batch

from ..log.test_descriptor_budget import out_of_descriptors
from ..replicas.test_replication_steps import decide, fetch_round, hosted, values

TP = TopicPartition("orders", 0)


def produce(leader, value: bytes):
    batch = encode_batch([(None, value, 1000)])
    return append_produced(leader, acks=1, min_insync_replicas=1, batch=batch, header=validate_batch(batch),
                           fsync=False, now_ms=0)


def test_an_emfile_is_noted_and_counted_an_eio_takes_the_directory_offline(tmp_path):
    failures = LogDirFailures(tmp_path)
    counted, offline = [], []
    failures.on_descriptor_shortage = lambda: counted.append(1)
    failures.connect(offline.append)
    for errno_ in (errno.EMFILE, errno.ENFILE):
        failures.failed("an append to orders-0", OSError(errno_, "no descriptor"))
    assert not failures.offline and failures.descriptor_shortages == 2 and len(counted) == 2 and offline == []
    failures.failed("an append to orders-0", OSError(errno.EIO, "Input/output error"))
    assert failures.offline and len(offline) == 1


def test_a_leader_out_of_descriptors_answers_a_retriable_error_and_takes_the_retry(tmp_path):
    clock = ManualClock()
    leader = hosted(tmp_path, 1, clock)
    decide(leader, 1, 1, isr=(1,))
    assert produce(leader, b"a").error_code == ErrorCode.NONE
    leader.run(lambda h: (h.log.release_descriptors(), NO_EFFECTS))  # the budget gave its descriptor back
    with out_of_descriptors(tmp_path):
        refused = produce(leader, b"b")
    assert refused.error_code == ErrorCode.STORAGE_ERROR
    assert "out of file descriptors" in refused.message and "nothing was written, retry" in refused.message
    assert not leader.dir_failures.offline and leader.dir_failures.descriptor_shortages == 1
    retried = produce(leader, b"b")
    assert retried.error_code == ErrorCode.NONE and retried.base_offset == 1
    assert values(leader) == [b"a", b"b"]


def test_a_follower_out_of_descriptors_fetches_again_and_catches_up(tmp_path):
    clock = ManualClock()
    leader, follower = hosted(tmp_path, 1, clock), hosted(tmp_path, 2, clock)
    decide(leader, 1, 1)
    decide(follower, 1, 1)
    produce(leader, b"a")
    follower.run(lambda h: (h.log.release_descriptors(), NO_EFFECTS))
    with out_of_descriptors(tmp_path / "b2"):
        try:
            fetch_round(leader, follower, 1)
        except OSError as exc:  # the replica fetcher hands it to the directory's channel (follower_answers.py)
            follower.dir_failures.failed("an append of the leader's records to orders-0", exc)
    assert not follower.dir_failures.offline and follower.log.log_end_offset == 0
    fetch_round(leader, follower, 1)
    assert values(follower) == [b"a"]


def test_a_checkpoint_round_out_of_descriptors_is_tried_again(tmp_path: Path):
    clock = ManualClock()
    replicas = ReplicaManager(broker_id=1, log_dirs=[tmp_path], log_config=LogConfig(), clock=clock)
    replicas.load()
    leader = replicas.get_or_create(TP)
    decide(leader, 1, 1, isr=(1,))
    produce(leader, b"a")
    leader.run(lambda h: (h.log.flush(), NO_EFFECTS))
    ticker = Checkpointer(replicas, clock, checkpoint_interval_ms=10, flush_check_interval_ms=10)
    checkpoint = tmp_path / RECOVERY_POINT_CHECKPOINT_FILE
    clock.advance(10)
    with out_of_descriptors(tmp_path):
        ticker._round()
    assert not replicas.directories[0].failures.offline and replicas.directories[0].failures.descriptor_shortages == 1
    assert not checkpoint.exists() or read_offsets_checkpoint(checkpoint) == {}
    clock.advance(10)
    ticker._round()
    assert read_offsets_checkpoint(checkpoint) == {("orders", 0): 1}
