"""Leader election pre-checks and outcomes (Kafka's ElectLeaders codes)."""

from __future__ import annotations

import pytest

from replog.common.error_codes import ErrorCode
from replog.common.topic_admin.core.refusal import Refusal, Status
from replog.gateway.core import elections as core

TOPICS = {"t": {
    "partitions": {0: [1, 2], 1: [1, 2], 2: [3, 1], 3: [2, 1], 4: [3, 4], 5: [1, 2]},
    "states": {
        0: (1, [1, 2]),      # preferred leads
        1: (2, [2, 1]),      # preferred 1 in ISR, not leading: eligible
        2: (1, [1, 3]),      # preferred 3 is dead
        3: (1, [1]),         # preferred 2 alive but out of the ISR
        4: (-1, [3]),        # offline, no live replica (3 and 4 dead)
        # 5: no state yet
    },
}}


def decided(view, election_type, partitions):
    checked = core.precheck(view, election_type, partitions)
    return {tp: o.code for tp, o in checked.decided.items()}, checked.eligible


def test_preferred_prechecks(make_view):
    view = make_view(brokers=(1, 2), topics=TOPICS)
    partitions = core.chosen_partitions(view, [], all_partitions=True) + [("t", 9), ("x", 0)]
    codes, eligible = decided(view, core.ElectionType.PREFERRED, partitions)
    assert eligible == (("t", 1),)
    assert codes[("t", 0)] is ErrorCode.ELECTION_NOT_NEEDED
    assert codes[("t", 2)] is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert codes[("t", 3)] is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert codes[("t", 9)] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert codes[("x", 0)] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # No state yet: the preferred replica is in no ISR, so it cannot be elected.
    assert codes[("t", 5)] is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


def test_unclean_prechecks(make_view):
    view = make_view(brokers=(1, 2), topics=TOPICS)
    codes, eligible = decided(view, core.ElectionType.UNCLEAN, [("t", 0), ("t", 2), ("t", 4), ("t", 5)])
    assert codes == {("t", 0): ErrorCode.ELECTION_NOT_NEEDED, ("t", 2): ErrorCode.ELECTION_NOT_NEEDED,
                     ("t", 4): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}
    assert eligible == (("t", 5),)


def test_outcomes_after_the_controller(make_view):
    view = make_view(brokers=(1, 2), topics=TOPICS)
    after = core.outcomes_after(view, core.ElectionType.PREFERRED, [("t", 0), ("t", 1)], True, 1000)
    assert after[("t", 0)].code is ErrorCode.NONE
    assert after[("t", 1)].code is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    timed_out = core.outcomes_after(view, core.ElectionType.PREFERRED, [("t", 1)], False, 1234)
    assert timed_out[("t", 1)].code is ErrorCode.REQUEST_TIMED_OUT and "1234 ms" in timed_out[("t", 1)].message


@pytest.mark.parametrize("partitions, all_partitions, fragment", [
    ([], False, "Name the partitions"),
    ([("t", 0)], True, "not both"),
    ([("t", 0), ("t", 0)], False, "t-0 is listed twice"),
])
def test_bad_selections(make_view, partitions, all_partitions, fragment):
    with pytest.raises(Refusal) as caught:
        core.chosen_partitions(make_view(topics=TOPICS), partitions, all_partitions)
    assert caught.value.status is Status.INVALID_ARGUMENT and fragment in caught.value.message
