"""What a broker does with an append its disk refused (a failed write or fsync).

The leader answers the produce with STORAGE_ERROR and the directory goes offline; the follower's
fetcher does the same to the directory; with no directory left online the broker halts. An
EMFILE is only a shortage: the directory stays online and the answer says to retry. The
replication simulation's disks (tests/scenario/broker) go through the same functions.
"""

from __future__ import annotations

import errno
from pathlib import Path

from replog.broker.core.errors import ErrorCode
from replog.broker.logdirs.log_dir_failures import LogDirFailures, halts_broker
from replog.broker.replicas.follower_side import follower_append_failed
from replog.broker.replicas.leader_side import storage_failure_answer
from replog.common.core.partitions import TopicPartition

TP = TopicPartition("orders", 0)
FSYNC_FAILED = OSError(errno.EIO, "Input/output error")


def failures_told(offline: list[str]) -> LogDirFailures:
    failures = LogDirFailures(Path("/data/replog"))
    failures.connect(offline.append)
    return failures


def test_a_produce_whose_fsync_failed_is_answered_storage_error_and_the_directory_goes_offline():
    offline: list[str] = []
    failures = failures_told(offline)
    answer = storage_failure_answer(failures, TP, FSYNC_FAILED)
    assert answer.error_code is ErrorCode.STORAGE_ERROR and answer.base_offset == -1
    assert "offline" in answer.message and "orders-0" in answer.message
    assert failures.offline and len(offline) == 1 and "an append to orders-0" in offline[0]
    again = storage_failure_answer(failures, TP, FSYNC_FAILED)  # told once; the next append is refused too
    assert again.error_code is ErrorCode.STORAGE_ERROR and len(offline) == 1


def test_out_of_descriptors_keeps_the_directory_online_and_says_retry():
    offline: list[str] = []
    failures = failures_told(offline)
    answer = storage_failure_answer(failures, TP, OSError(errno.EMFILE, "Too many open files"))
    assert answer.error_code is ErrorCode.STORAGE_ERROR and "retry" in answer.message
    assert not failures.offline and offline == []


def test_a_follower_append_whose_fsync_failed_takes_the_directory_offline():
    offline: list[str] = []
    failures = failures_told(offline)
    follower_append_failed(failures, TP, FSYNC_FAILED)
    assert failures.offline and offline == [failures.offline_reason]
    assert "the leader's records to orders-0" in offline[0]


def test_the_broker_halts_once_no_directory_is_online():
    assert halts_broker([False])
    assert halts_broker([])
    assert not halts_broker([False, True])
    assert halts_broker(online for online in (False, False))
