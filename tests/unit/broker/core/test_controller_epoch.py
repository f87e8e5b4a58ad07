"""The controller fence's rule: an epoch above the fence is obeyed only when ZooKeeper confirms it."""

from hypothesis import given
from hypothesis import strategies as st

from replog.broker.core.controller_epoch import NO_CONTROLLER_EPOCH, judge, needs_confirmation
from replog.broker.core.errors import ErrorCode

epochs = st.integers(min_value=-1, max_value=(1 << 31) - 1)


def test_the_current_epoch_is_obeyed_without_asking_zookeeper():
    assert not needs_confirmation(5, 5)
    assert judge(5, 5) == (5, None)


def test_an_older_epoch_is_a_deposed_controller():
    assert not needs_confirmation(4, 5)
    verdict = judge(4, 5)
    assert verdict.fence == 5 and verdict.refusal.code is ErrorCode.STALE_CONTROLLER_EPOCH


def test_a_newer_epoch_that_zookeeper_holds_moves_the_fence():
    assert needs_confirmation(6, 5) and needs_confirmation(0, NO_CONTROLLER_EPOCH)
    assert judge(6, 5, confirmed_epoch=6) == (6, None)
    assert judge(1, NO_CONTROLLER_EPOCH, confirmed_epoch=1) == (1, None)


def test_a_made_up_epoch_is_refused_and_the_fence_stays():
    verdict = judge(2147483647, 5, confirmed_epoch=5)
    assert verdict.fence == 5 and verdict.refusal.code is ErrorCode.STALE_CONTROLLER_EPOCH
    assert "no controller has held it" in verdict.refusal.reason


def test_a_newer_epoch_already_superseded_in_zookeeper_is_stale_and_the_fence_takes_zookeepers():
    verdict = judge(6, 5, confirmed_epoch=7)
    assert verdict.fence == 7 and verdict.refusal.code is ErrorCode.STALE_CONTROLLER_EPOCH


@given(request=epochs, fence=epochs, confirmed=epochs)
def test_the_fence_never_goes_down_and_only_holds_confirmed_epochs(request, fence, confirmed):
    asked = needs_confirmation(request, fence)
    verdict = judge(request, fence, confirmed if asked else None)
    assert verdict.fence >= fence
    assert verdict.fence == fence or (asked and verdict.fence == confirmed)
    confirmed_here = (request == fence and fence != NO_CONTROLLER_EPOCH) or (asked and request == confirmed)
    assert (verdict.refusal is None) == (request >= 0 and request == verdict.fence and confirmed_here)


def test_a_restarted_broker_asks_zookeeper_before_obeying_any_epoch():
    """A broker starts with no fence: a request naming -1 (or any epoch) is not obeyed on its word."""
    assert needs_confirmation(0, NO_CONTROLLER_EPOCH) and needs_confirmation(7, NO_CONTROLLER_EPOCH)
    assert judge(7, NO_CONTROLLER_EPOCH, confirmed_epoch=7) == (7, None)
    refused = judge(7, NO_CONTROLLER_EPOCH, confirmed_epoch=8)
    assert refused.fence == 8 and refused.refusal.code is ErrorCode.STALE_CONTROLLER_EPOCH


def test_a_negative_epoch_is_never_obeyed():
    for fence in (NO_CONTROLLER_EPOCH, 0, 5):
        verdict = judge(-1, fence)
        assert verdict.fence == fence and verdict.refusal.code is ErrorCode.STALE_CONTROLLER_EPOCH
        assert "negative" in verdict.refusal.reason
