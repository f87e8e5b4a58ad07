"""Adapters that block threads: delayed produces and long polls complete on events,
expire on time, and release everyone on shutdown."""

from __future__ import annotations

import threading
import time

from replog.broker.adapters.delayed_produces import DelayedProduces
from replog.broker.adapters.long_poll import long_poll
from replog.broker.adapters.metadata_cache import MetadataCache
from replog.broker.adapters.partition_dirs import parse_partition_directory
from replog.broker.core.errors import ErrorCode
from replog.broker.core.produce import ProduceProgress, ProduceWait
from replog.broker.core.topic_partition import TopicPartition
from replog.common.clock import SystemClock
from replog.v1 import broker_control_pb2, common_pb2

from tests.unit.broker.adapters.adapter_helpers import wait_for

TP = TopicPartition("t", 0)


class Progress:
    def __init__(self) -> None:
        self.high_watermark = 0

    def __call__(self, tp: TopicPartition) -> ProduceProgress:
        return ProduceProgress(is_leader=True, leader_epoch=3, high_watermark=self.high_watermark, isr_size=2)


def wait_in_thread(delayed: DelayedProduces, timeout_ms: int):
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("results", delayed.wait(
        [ProduceWait(TP, 3, 0, 4, 2)], timeout_ms)))
    thread.start()
    return thread, box


def test_delayed_produce_completes_when_the_hw_passes_it():
    progress = Progress()
    delayed = DelayedProduces(progress, SystemClock())
    thread, box = wait_in_thread(delayed, 10_000)
    wait_for(lambda: len(delayed) == 1, "the produce to wait")
    progress.high_watermark = 3
    delayed.check(TP)
    assert thread.is_alive() and len(delayed) == 1
    progress.high_watermark = 5
    delayed.check(TP)
    thread.join(2)
    assert [r.error_code for r in box["results"]] == [ErrorCode.NONE] and len(delayed) == 0


def test_delayed_produce_times_out_and_close_releases_waiters():
    delayed = DelayedProduces(Progress(), SystemClock())
    started = time.monotonic()
    (result,) = delayed.wait([ProduceWait(TP, 3, 0, 4, 2)], 100)
    assert result.error_code is ErrorCode.REQUEST_TIMED_OUT and 0.09 < time.monotonic() - started < 2
    thread, box = wait_in_thread(delayed, 60_000)
    wait_for(lambda: len(delayed) == 1, "the produce to wait")
    delayed.close()
    thread.join(2)
    assert box["results"][0].error_code is ErrorCode.REQUEST_TIMED_OUT


def test_a_parked_produce_answers_its_callback_once_from_the_thread_that_moves_the_hw():
    progress = Progress()
    delayed = DelayedProduces(progress, SystemClock())
    answers = []
    delayed.park([ProduceWait(TP, 3, 0, 4, 2)], 10_000, answers.append)
    assert answers == [] and len(delayed) == 1  # parked; nothing blocked
    progress.high_watermark = 5
    delayed.check(TP)
    delayed.check(TP)
    delayed.expire_due()
    assert [[r.error_code for r in results] for results in answers] == [[ErrorCode.NONE]] and len(delayed) == 0


def test_a_parked_produce_that_can_complete_at_once_is_answered_before_park_returns():
    progress = Progress()
    progress.high_watermark = 5
    delayed = DelayedProduces(progress, SystemClock())
    answers = []
    delayed.park([ProduceWait(TP, 3, 0, 4, 2)], 10_000, answers.append)
    assert [results[0].error_code for results in answers] == [ErrorCode.NONE] and len(delayed) == 0


def test_a_parked_produce_expires_only_once_its_deadline_passed_and_close_answers_the_rest():
    delayed = DelayedProduces(Progress(), SystemClock())
    answers = []
    deadline_ms = delayed.park([ProduceWait(TP, 3, 0, 4, 2)], 50, answers.append)
    delayed.park([ProduceWait(TP, 3, 5, 9, 2)], 60_000, answers.append)
    delayed.expire_due()
    assert answers == []  # not due yet: the caller keeps the clock
    wait_for(lambda: SystemClock().monotonic_ms() > deadline_ms, "the first produce's deadline to pass")
    delayed.expire_due()
    assert [results[0].error_code for results in answers] == [ErrorCode.REQUEST_TIMED_OUT]
    delayed.close()
    assert [results[0].error_code for results in answers] == [ErrorCode.REQUEST_TIMED_OUT] * 2 and len(delayed) == 0


class Parked:
    """A partition stand-in: counts reads, wakes its waiters like HostedPartition.wake."""

    def __init__(self, available: int = 0) -> None:
        self.waiters: set = set()
        self.available = available
        self.reads = 0

    def add_waiter(self, waiter):
        self.waiters.add(waiter)

    def remove_waiter(self, waiter):
        self.waiters.discard(waiter)

    def wake(self):
        for waiter in list(self.waiters):
            waiter.notify(self)


def poll(partitions, *, max_wait_ms, min_bytes=1, error=False):
    def read_one(i, bytes_left):
        partitions[i].reads += 1
        return ("error" if error else "data", partitions[i].available)

    return long_poll(read_one, partitions, bytes_max=1 << 20, size=lambda a: a[1], urgent=lambda a: a[0] == "error",
                     min_bytes=min_bytes, max_wait_ms=max_wait_ms, clock=SystemClock())


def test_long_poll_answers_on_wake_up_not_on_timeout():
    parked = Parked()

    def append():
        parked.available = 10
        parked.wake()

    threading.Timer(0.1, append).start()
    started = time.monotonic()
    answers = poll([parked], max_wait_ms=5000)
    assert answers == [("data", 10)] and time.monotonic() - started < 4 and not parked.waiters  # not the 5 s


def test_long_poll_rereads_only_the_partitions_that_woke_it():
    quiet = [Parked() for _ in range(50)]
    busy = Parked()

    def append():
        busy.available = 7
        busy.wake()

    threading.Timer(0.05, append).start()
    answers = poll([*quiet, busy], max_wait_ms=5000)
    assert answers[-1] == ("data", 7)
    assert busy.reads == 2 and all(p.reads == 1 for p in quiet)


def test_long_poll_gives_up_at_its_deadline_and_answers_errors_at_once():
    parked = Parked()
    started = time.monotonic()
    poll([parked], max_wait_ms=100)
    assert 0.09 < time.monotonic() - started < 1
    started = time.monotonic()
    poll([parked], max_wait_ms=5000, error=True)
    assert time.monotonic() - started < 0.1 and not parked.waiters


def test_metadata_cache_full_and_delta_updates():
    cache = MetadataCache()
    state = broker_control_pb2.PartitionState(topic="a", partition=0, leader=1, leader_epoch=2, isr=[1, 2],
                                              replicas=[1, 2, 3])
    brokers = [common_pb2.BrokerEndpoint(broker_id=b, host="h", port=9000 + b) for b in (1, 2)]
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, live_brokers=brokers, partitions=[state],
                                                          full=True))
    reply = cache.metadata_response([])
    (topic,) = reply.topics
    assert reply.controller_id == 7 and topic.name == "a"
    assert list(topic.partitions[0].offline_replicas) == [3]
    assert cache.broker_address(2) == "h:9002" and cache.broker_address(3) is None
    offline = broker_control_pb2.PartitionState(topic="a", partition=1, leader=-1, leader_epoch=1, replicas=[3])
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, live_brokers=brokers, partitions=[offline]))
    partitions = cache.metadata_response(["a"]).topics[0].partitions
    assert [p.error_code for p in partitions] == [0, common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE]
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, live_brokers=brokers, deleted_topics=["a"]))
    assert cache.metadata_response(["a"]).topics[0].error_code == common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_cache_never_takes_a_partition_back_to_an_older_state():
    """A delta the controller gave up on (deadline) may be applied after a newer one."""
    cache = MetadataCache()

    def state(leader_epoch, partition_epoch, isr):
        return broker_control_pb2.PartitionState(topic="a", partition=0, leader=1, leader_epoch=leader_epoch,
                                                 partition_epoch=partition_epoch, isr=isr, replicas=[1, 2, 3])

    def delta(*states, full=False):
        cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=states, full=full))
        return list(cache.metadata_response(["a"]).topics[0].partitions[0].isr)

    assert delta(state(2, 5, [1, 2, 3])) == [1, 2, 3]
    assert delta(state(2, 4, [1, 2])) == [1, 2, 3]  # older partition epoch: ignored
    assert delta(state(1, 9, [1])) == [1, 2, 3]  # older leader epoch: ignored
    assert delta(state(2, 6, [1, 3])) == [1, 3]
    assert delta(state(3, 0, [1])) == [1]  # a higher leader epoch is newer, whatever its partition epoch
    assert delta(state(1, 0, [1, 2]), full=True) == [1, 2]  # a full update is the whole truth


def test_metadata_cache_confirms_by_a_digest_kept_current_through_deltas_and_deletions():
    from replog.common import state_digest

    cache = MetadataCache()

    def state(topic, partition, leader_epoch, partition_epoch, isr):
        return broker_control_pb2.PartitionState(topic=topic, partition=partition, leader=isr[0],
                                                 leader_epoch=leader_epoch, partition_epoch=partition_epoch, isr=isr,
                                                 replicas=[1, 2, 3])

    def confirmed(*expected):
        digest = state_digest.Digest.of(state_digest.metadata_term(
            s.topic, s.partition, s.leader, s.leader_epoch, s.partition_epoch, s.isr, s.replicas,
            s.adding_replicas, s.removing_replicas) for s in expected)
        return cache.confirm(broker_control_pb2.UpdateMetadataRequest(controller_id=7,
                                                                      metadata_digest=digest.encode()))

    a0, a1, b0 = state("a", 0, 1, 1, [1, 2, 3]), state("a", 1, 1, 1, [2, 3]), state("b", 0, 4, 2, [3])
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=[a0, a1, b0], full=True))
    cache.refresh_digest(limit=1)  # the background folds a bounded share; a confirm folds the rest
    assert confirmed(a0, a1, b0) and not confirmed(a0, a1)
    newer = state("a", 1, 2, 1, [3])
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=[newer, state("a", 0, 0, 9, [1])]))
    assert confirmed(a0, newer, b0)  # the older state of a-0 was ignored, and left the digest alone
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, deleted_topics=["a"]))
    assert confirmed(b0)
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=[a0], full=True))
    assert confirmed(a0)


def test_partition_directory_names():
    assert parse_partition_directory("orders-12") == TopicPartition("orders", 12)
    assert parse_partition_directory("my-topic-3") == TopicPartition("my-topic", 3)
    assert parse_partition_directory("replication-offset-checkpoint") is None
    assert parse_partition_directory("-3") is None


def test_wait_slots_keep_threads_for_replication():
    from replog.broker.adapters.wait_slots import RESERVED_THREADS, WaitSlots

    slots = WaitSlots(grpc_workers=64)
    assert slots.capacity == 64 - RESERVED_THREADS
    taken = [slots.try_take() for _ in range(slots.capacity)]
    assert all(taken) and not slots.try_take()  # the rest stay free for followers and the controller
    slots.give_back()
    assert slots.try_take()
    assert WaitSlots(grpc_workers=8).capacity == 4  # small pools still lend half
