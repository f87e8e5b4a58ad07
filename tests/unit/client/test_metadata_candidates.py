"""Which brokers a client asks for Metadata, in which order (replog.client.metadata)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from replog.client.metadata import UNREACHABLE_FORGET_S, metadata_candidates

A, B, C, BOOT = "a:1", "b:1", "c:1", "boot:1"


def test_leaders_come_before_other_brokers_and_bootstrap_last():
    order = metadata_candidates({B}, [A, B, C], [BOOT], {}, 100.0, random.Random(1))
    assert order[0] == B
    assert set(order[1:3]) == {A, C}
    assert order[3] == BOOT


def test_a_broker_that_failed_lately_is_asked_last_even_if_it_leads():
    order = metadata_candidates({A, B}, [A, B, C], [A], {A: 99.0}, 100.0, random.Random(1))
    assert order[-1] == A
    assert order[0] == B


def test_failed_brokers_go_in_the_order_they_failed_and_are_forgotten_in_time():
    failed = {A: 98.0, B: 99.0}
    assert metadata_candidates(set(), [A, B, C], [], failed, 100.0, random.Random(1)) == [C, A, B]
    later = 98.0 + UNREACHABLE_FORGET_S + 0.5  # A is forgotten, B not yet
    assert metadata_candidates(set(), [A, B], [], failed, later, random.Random(1)) == [A, B]


addresses = st.sampled_from([A, B, C, BOOT, "d:1", "e:1"])


@given(st.sets(addresses), st.lists(addresses), st.lists(addresses, min_size=1),
       st.dictionaries(addresses, st.floats(min_value=0, max_value=200)), st.integers(0, 2**32))
def test_every_known_address_is_asked_once(leaders, brokers, bootstrap, failed_at, seed):
    order = metadata_candidates(leaders, brokers, bootstrap, failed_at, 200.0, random.Random(seed))
    assert sorted(order) == sorted(set(leaders) | set(brokers) | set(bootstrap))
