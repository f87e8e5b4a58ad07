"""The replica fetcher's requests: whom they name, and when.

- A leader that stops answering is retried with an empty session open (no partitions named, no long
  poll) until it answers, and only then are the partitions named. A stream that failed is reopened
  on the same channel (gRPC reconnects it); one that got no answer in time, on a new channel.
- After an answer, a partition is named again when its position moved, not when the answer only
  told it a newer HW.

The transport is a fake stream stub standing in for the leader (this is the fetcher's own logic, not
replication: the integration tests run real brokers); the fetcher runs its real thread."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import grpc
from prometheus_client import CollectorRegistry

from replog.broker.core.partition import LeaderAndIsrDecision
from replog.broker.log import LogConfig, PartitionLog
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.broker.replicas.producer_headers import rebuild_from_log
from replog.broker.replication import fetch_stream, fetcher
from replog.broker.replication.fetcher import FetchSettings, ReplicaFetcher
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.turn import Turn
from replog.common import records
from replog.common.channels import ChannelCache
from replog.common.clock import SystemClock
from replog.common.core.partitions import TopicPartition
from replog.v1 import replication_pb2
from tests.unit.broker.thread_helpers import wait_for

PARTITIONS = [TopicPartition("orders", p) for p in range(20)]
BATCH = records.encode_batch([(None, b"x" * 100, 1_700_000_000_000)])


class Unavailable(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.UNAVAILABLE


class Cancelled(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.CANCELLED


class Stream:
    """A fake ReplicaFetchStream: each response is made when the fetcher's next request arrives."""

    def __init__(self, leader: "FakeLeader", requests) -> None:
        self._leader = leader
        self._requests = requests
        self._failed = False
        self._cancelled = threading.Event()

    def __next__(self):
        if self._failed:
            raise Unavailable()
        request = next(self._requests).fetch
        with self._leader.lock:
            self._leader.requests.append(request)
            if self._leader.down:
                self._failed = True  # a failed stream stays failed; the fetcher opens another
                raise Unavailable()
            silent = self._leader.silent
        if silent:  # as behind a network cut: nothing comes back until the fetcher gives up
            self._cancelled.wait()
            raise Cancelled()
        time.sleep(0.01)  # an idle long poll would wait; keep the loop slow
        answer = self._leader.answers.pop(0) if self._leader.answers else replication_pb2.ReplicaFetchResponse()
        answer.session_id = 7
        return replication_pb2.ReplicaFetchStreamResponse(fetch=answer)

    def cancel(self) -> None:
        self._failed = True
        self._cancelled.set()


class FakeLeader:
    """Refuses every request while `down`; answers none while `silent`; otherwise answers at once: the
    next of `answers`, then answers naming no partitions. Remembers the channel of every stream."""

    def __init__(self, down: bool = True, answers: list[replication_pb2.ReplicaFetchResponse] = (),
                 silent: bool = False) -> None:
        self.down = down
        self.silent = silent
        self.answers = list(answers)
        self.requests: list[replication_pb2.ReplicaFetchRequest] = []
        self.channels: list[grpc.Channel] = []
        self.lock = threading.Lock()

    def stub(self, channel):
        leader = self
        with self.lock:
            self.channels.append(channel)

        class Stub:
            def ReplicaFetchStream(self, request_iterator):
                return Stream(leader, request_iterator)

        return Stub()


def hosted(tmp_path: Path, tp: TopicPartition) -> HostedPartition:
    log = PartitionLog.open(tmp_path / f"{tp.topic}-{tp.partition}", LogConfig(), SystemClock())
    replica = HostedPartition(tp, 2, log, high_watermark=0, producer_state=rebuild_from_log(log))
    replica.apply_leader_and_isr(LeaderAndIsrDecision(tp, 1, 3, (1, 2), 3, (1, 2)), now_ms=0)
    return replica


@contextmanager
def running_fetcher(leader: FakeLeader, replicas: dict, monkeypatch) -> Iterator[ReplicaFetcher]:
    """A started fetcher following every partition (leader epoch 3) on `leader`; stopped, and the
    replicas closed, afterwards."""
    monkeypatch.setattr(fetch_stream.replication_pb2_grpc, "ReplicationServiceStub", leader.stub)
    fetcher = ReplicaFetcher(
        leader_id=1, settings=FetchSettings(2, 500, 1 << 20, 1 << 20), lookup=replicas.get,
        address_of=lambda broker_id: "127.0.0.1:1", broker_epoch_of=lambda: 1, channels=ChannelCache(),
        clock=SystemClock(), metrics=BrokerMetrics(CollectorRegistry()), turn=Turn())
    fetcher.add([(tp, 3) for tp in PARTITIONS], None)
    fetcher.start()
    try:
        yield fetcher
    finally:
        fetcher.stop()
        for replica in replicas.values():
            replica.close()


def test_a_dead_leader_is_retried_with_empty_requests_until_it_answers(tmp_path, monkeypatch):
    replicas = {tp: hosted(tmp_path, tp) for tp in PARTITIONS}
    leader = FakeLeader()
    with running_fetcher(leader, replicas, monkeypatch):
        wait_for(lambda: len(leader.requests) >= 4, "the fetcher to retry")
        with leader.lock:
            first, *retries = list(leader.requests)
            leader.down = False
        assert len(first.partitions) == len(PARTITIONS)  # the first attempt names everything
        assert all(not r.partitions and r.session_epoch == 0 and r.max_wait_ms == 0 for r in retries)
        assert all(channel is leader.channels[0] for channel in leader.channels)

        wait_for(lambda: any(r.session_epoch == 1 for r in list(leader.requests)), "a request in the new session")
        with leader.lock:
            joined = next(r for r in leader.requests if r.session_epoch == 1)
        assert joined.session_id == 7
        assert sorted(p.partition for p in joined.partitions) == list(range(len(PARTITIONS)))


def test_a_leader_that_does_not_answer_in_time_is_fetched_from_on_a_new_channel(tmp_path, monkeypatch):
    monkeypatch.setattr(fetcher, "RPC_SLACK_S", 0.1)  # the deadline: the long poll's wait and this
    replicas = {tp: hosted(tmp_path, tp) for tp in PARTITIONS}
    leader = FakeLeader(down=False, silent=True)
    with running_fetcher(leader, replicas, monkeypatch):
        wait_for(lambda: len(leader.channels) >= 3, "the streams after two requests without an answer")
        with leader.lock:
            channels = leader.channels[:3]
        assert len({id(channel) for channel in channels}) == 3  # the list holds them: ids are not reused


def test_a_partition_is_named_again_when_it_appended_not_when_it_only_learned_a_high_watermark(
        tmp_path, monkeypatch):
    replicas = {tp: hosted(tmp_path, tp) for tp in PARTITIONS}
    appended, told_hw = PARTITIONS[3], PARTITIONS[4]
    with replicas[told_hw].lock:
        replicas[told_hw].log.append_as_follower(records.with_offset_and_epoch(BATCH, 0, 3))
    first = replication_pb2.ReplicaFetchResponse(partitions=[
        replication_pb2.ReplicaFetchPartitionData(
            topic=appended.topic, partition=appended.partition, high_watermark=0, log_end_offset=1, leader_epoch=3,
            records=records.with_offset_and_epoch(BATCH, 0, 3)),
        replication_pb2.ReplicaFetchPartitionData(
            topic=told_hw.topic, partition=told_hw.partition, high_watermark=1, log_end_offset=1, leader_epoch=3),
    ])
    leader = FakeLeader(down=False, answers=[first])
    with running_fetcher(leader, replicas, monkeypatch):
        wait_for(lambda: len(leader.requests) >= 2, "the request after the first answer")
        with leader.lock:
            opened, after = leader.requests[:2]
        assert len(opened.partitions) == len(PARTITIONS)
        assert [(p.partition, p.fetch_offset) for p in after.partitions] == [(appended.partition, 1)]
        with replicas[told_hw].lock:
            assert replicas[told_hw].replica.high_watermark == 1  # the HW was taken all the same


def test_a_partition_whose_log_was_cut_outside_the_fetcher_is_named_again_at_its_new_end(tmp_path, monkeypatch):
    replicas = {tp: hosted(tmp_path, tp) for tp in PARTITIONS}
    cut = PARTITIONS[2]
    with replicas[cut].lock:
        replicas[cut].log.append_as_follower(records.with_offset_and_epoch(BATCH, 0, 3))
    leader = FakeLeader(down=False)
    with running_fetcher(leader, replicas, monkeypatch) as running:
        wait_for(lambda: len(leader.requests) >= 3, "idle requests in the session")
        with leader.lock:
            assert all(not r.partitions for r in leader.requests[1:])  # idle: nothing named
        with replicas[cut].lock:
            replicas[cut].log.truncate_to(0)  # as the scrubber does on a damaged segment
        running.position_changed(cut)

        def named():
            with leader.lock:
                return [(p.partition, p.fetch_offset) for r in leader.requests[1:] for p in r.partitions]

        wait_for(lambda: named() == [(cut.partition, 0)], "the cut partition named at its new end")
