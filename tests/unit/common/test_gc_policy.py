"""The collector policy: paused blocks nest and overlap across threads, settle freezes survivors."""

from __future__ import annotations

import gc
import threading

import pytest

from replog.common import gc_policy
from replog.common.config import ConfigError


def test_paused_blocks_nest_and_the_collector_comes_back_after_the_last():
    assert gc.isenabled()
    with gc_policy.paused():
        assert not gc.isenabled()
        with gc_policy.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_block_ending_on_another_thread_does_not_restart_the_collector_under_this_one():
    inside, release = threading.Event(), threading.Event()

    def other():
        with gc_policy.paused():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with gc_policy.paused():
        thread.start()
        assert inside.wait(5)
    assert not gc.isenabled()  # the other thread's block is still open
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_an_exception_inside_still_restarts_the_collector():
    try:
        with gc_policy.paused():
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.isenabled()


def test_settle_moves_the_survivors_out_of_later_collections():
    gc.unfreeze()
    try:
        kept = [[i] for i in range(1000)]
        assert gc_policy.settle() >= 0
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()


def test_a_freezing_block_leaves_what_it_built_out_of_later_collections():
    before = gc.get_freeze_count()
    try:
        with gc_policy.paused(freeze=True):
            built = [{"replica": i} for i in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + len(built)
    finally:
        gc.unfreeze()


def test_a_block_may_decide_inside_to_freeze_what_it_leaves():
    before = gc.get_freeze_count()
    try:
        with gc_policy.paused() as pause:
            built = [{"state": i} for i in range(1000)]
            pause.freeze_on_exit()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + len(built)
    finally:
        gc.unfreeze()


def test_a_block_that_does_not_decide_to_freeze_leaves_its_objects_to_the_collector():
    gc.unfreeze()
    with gc_policy.paused():
        built = [{"state": i} for i in range(1000)]
    assert gc.get_freeze_count() == 0
    assert len(built) == 1000


def test_the_settings_come_from_the_environment_and_an_unknown_one_is_refused():
    assert gc_policy.choice({}) == gc_policy.DEFAULT
    assert gc_policy.choice({gc_policy.ENV: " Default "}) == "default"
    with pytest.raises(ConfigError):
        gc_policy.choice({gc_policy.ENV: "fast"})


def test_tuned_freezes_what_survives_a_full_collection_and_default_leaves_the_collector_alone():
    gc.unfreeze()
    try:
        assert gc_policy.configure({gc_policy.ENV: "default"}) == "default"
        survivor = [object()]  # noqa: F841 - alive across the collections below
        gc.collect()
        assert gc.get_freeze_count() == 0
        assert gc_policy.configure({gc_policy.ENV: "tuned"}) == "tuned"
        gc_policy.configure({gc_policy.ENV: "tuned"})  # twice is once
        gc.collect(1)  # not a full collection: nothing frozen
        assert gc.get_freeze_count() == 0
        gc.collect()
        assert gc.get_freeze_count() > 0
    finally:
        gc_policy.unconfigure()
        gc.unfreeze()
    gc.collect()
    assert gc.get_freeze_count() == 0
