"""The bound on client waits that hold a gRPC handler thread."""

from __future__ import annotations


def test_wait_slots_keep_threads_for_replication():
    from replog.broker.runtime.wait_slots import RESERVED_THREADS, WaitSlots

    slots = WaitSlots(grpc_workers=64)
    assert slots.capacity == 64 - RESERVED_THREADS
    taken = [slots.try_take() for _ in range(slots.capacity)]
    assert all(taken) and not slots.try_take()  # the rest stay free for followers and the controller
    slots.give_back()
    assert slots.try_take()
    assert WaitSlots(grpc_workers=8).capacity == 4  # small pools still lend half
