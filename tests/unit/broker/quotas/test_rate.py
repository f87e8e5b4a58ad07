"""The sampled rate and the throttle a user's quota answers with (broker/quotas/core): the laws that make a
quota hold, checked over any timing Hypothesis finds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replog.broker.quotas.core.rate import THROTTLE_MS_MAX, SampledRate
from replog.broker.quotas.core.throttle import UserThrottle

windows = st.tuples(st.integers(2, 12), st.sampled_from([10, 100, 1000]))  # (samples, sample_ms)
quotas = st.integers(10_000, 10_000_000)  # bytes per second


@st.composite
def clients(draw):
    """A window, a quota, and a client's requests: (pause before it in ms, size, whether it waits out the
    throttle of its answer). Each request is at most a tenth of what the quota allows over the window."""
    samples, sample_ms = draw(windows)
    quota = draw(quotas)
    allowance = quota * (samples - 1) * sample_ms // 1000
    largest = max(1, allowance // 10)
    requests = draw(st.lists(st.tuples(st.sampled_from([0, 0, 1, sample_ms // 2, sample_ms, 3 * sample_ms]),
                                       st.integers(1, largest), st.booleans()), min_size=1, max_size=150))
    return samples, sample_ms, quota, requests


def admitted_of(samples, sample_ms, quota, requests) -> list[tuple[int, int]]:
    """(time, size) of the requests the throttle admits, the client waiting or not as each request says."""
    throttle, now, admitted = UserThrottle(samples, sample_ms), 0, []
    for pause, size, waits in requests:
        now += pause
        answer = throttle.admit(size, quota, now)
        if not answer.refused:
            admitted.append((now, size))
        if waits:
            now += answer.throttle_ms
    return admitted


@given(clients())
def test_a_client_is_held_to_its_quota_whatever_its_timing(client):
    """Over any stretch between two admitted requests, what was admitted exceeds the quota's bytes for the
    stretch by less than a window's worth and one request: waiting or not, a client gets no more."""
    samples, sample_ms, quota, requests = client
    admitted = admitted_of(*client)
    largest = max(size for _, size in admitted)
    slack = quota * samples * sample_ms / 1000 + largest
    for first in range(len(admitted)):
        total = 0
        for at, size in admitted[first:]:
            total += size
            assert total <= quota * (at - admitted[first][0]) / 1000 + slack


@given(windows, quotas, st.integers(1, 200), st.integers(1, 300))
def test_a_client_below_half_its_quota_is_never_throttled(window, quota, count, tenths_of_allowance):
    samples, sample_ms = window
    size = max(1, quota * (samples - 1) * sample_ms // 1000 * min(tenths_of_allowance, 4) // 10)
    gap_ms = -(-size * 2000 // quota)  # sending `size` every gap_ms is at most half the quota
    throttle = UserThrottle(samples, sample_ms)
    for i in range(count):
        answer = throttle.admit(size, quota, i * gap_ms)
        assert answer == type(answer)(0, False)


@given(windows, quotas, st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 10**7)), min_size=1, max_size=60))
def test_a_request_arriving_while_throttled_is_refused_unmeasured_with_the_time_left(window, quota, requests):
    throttle, now = UserThrottle(*window), 0
    for pause, size in requests:
        now += pause
        until, total = throttle.throttled_until_ms, throttle.rate.total(now)
        answer = throttle.admit(size, quota, now)
        if now < until:
            assert answer.refused and answer.throttle_ms == until - now
            assert throttle.rate.total(now) == total and throttle.throttled_until_ms == until
        else:
            assert not answer.refused and throttle.rate.total(now) == total + size
            assert throttle.remaining_ms(now) == answer.throttle_ms <= THROTTLE_MS_MAX


@given(windows, st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 10**6)), max_size=80), st.integers(0, 10**5))
def test_the_window_keeps_exactly_the_bytes_of_the_samples_it_has_not_forgotten(window, records, later):
    samples, sample_ms = window
    rate, now, kept = SampledRate(samples, sample_ms), 0, []
    for pause, size in records:
        now += pause
        rate.record(size, now)
        kept.append((now, size))
    now += later
    # a sample is forgotten once it started a whole window ago: nothing recorded since its start survives it
    starts = []
    for at, _ in kept:
        if not starts or at - starts[-1] >= sample_ms:
            starts.append(at)
    live = [s for s in starts if now - s < samples * sample_ms][-samples:]
    expected = sum(size for at, size in kept if live and at >= live[0])
    assert rate.total(now) == expected
    assert rate.rate(now) == expected * 1000 / max(now - live[0] if live else 0, (samples - 1) * sample_ms)
    assert rate.idle(now) == (not live)


def test_the_first_requests_of_a_quiet_user_pass_until_they_exceed_the_window_s_allowance():
    throttle = UserThrottle(samples=11, sample_ms=1000)  # the default window: 10 s of allowance at first
    assert throttle.admit(900_000, quota=100_000, now_ms=0).throttle_ms == 0
    answer = throttle.admit(300_000, quota=100_000, now_ms=0)
    assert answer == type(answer)(2000, False)  # 1.2 MB at 100 KB/s is 12 s; 10 s are taken as past
    assert throttle.admit(1, quota=100_000, now_ms=1500) == type(answer)(500, True)
