"""The ELR rules (elr.py) and where the offline election puts ELR members (election.py)."""

from hypothesis import given
from hypothesis import strategies as st

from replog.controller.core.election import OfflineElection, offline_partition_leader
from replog.controller.core.elr import lowest_default, next_elr, without
from replog.controller.core.model import BrokerInfo

REPLICAS = (1, 2, 3)


def test_a_replica_dropped_below_min_isr_becomes_eligible():
    assert next_elr(isr_before=(1, 2), elr_before=(), isr_after=(1,), min_isr=2, replicas=REPLICAS) == (2,)


def test_a_replica_dropped_while_the_isr_stays_at_min_isr_is_not_eligible():
    # The HW can move on with 1 and 2 alone: 3 may miss committed records from now on.
    assert next_elr(isr_before=(1, 2, 3), elr_before=(), isr_after=(1, 2), min_isr=2, replicas=REPLICAS) == ()


def test_the_whole_isr_dying_at_once_leaves_every_member_but_the_kept_one_eligible():
    assert next_elr(isr_before=(1, 2, 3), elr_before=(), isr_after=(1,), min_isr=2, replicas=REPLICAS) == (2, 3)


def test_an_isr_back_at_min_isr_empties_the_elr():
    assert next_elr(isr_before=(1,), elr_before=(2, 3), isr_after=(1, 2), min_isr=2, replicas=REPLICAS) == ()


def test_a_member_back_in_the_isr_leaves_the_elr_and_the_rest_stay():
    assert next_elr(isr_before=(1,), elr_before=(2, 3), isr_after=(1, 2), min_isr=3, replicas=REPLICAS) == (3,)


def test_with_min_isr_unknown_the_elr_gains_nobody_and_loses_only_members_back_in_the_isr():
    # No live broker to say what its leaders enforce, and no leader either to commit anything meanwhile.
    assert next_elr(isr_before=(1,), elr_before=(2, 3), isr_after=(1,), min_isr=None, replicas=REPLICAS) == (2, 3)
    assert next_elr(isr_before=(1, 2), elr_before=(3,), isr_after=(1,), min_isr=None, replicas=REPLICAS) == (3,)
    assert next_elr(isr_before=(1,), elr_before=(2, 3), isr_after=(3,), min_isr=None, replicas=REPLICAS) == (2,)


def test_the_default_taken_is_the_lowest_of_the_live_brokers_and_unknown_without_any():
    live = {b: BrokerInfo(b, "h", 9000 + b, min_insync_replicas_default=m) for b, m in ((1, 3), (2, 2), (3, 2))}
    assert lowest_default(live) == 2
    assert lowest_default({}) is None


def test_without_drops_the_named_brokers_only():
    assert without((1, 2, 3), (2, 4)) == (1, 3)


@given(isr_before=st.sets(st.sampled_from(REPLICAS), min_size=1), isr_after=st.sets(st.sampled_from(REPLICAS),
       min_size=1), elr_before=st.sets(st.sampled_from(REPLICAS)), min_isr=st.integers(1, 4))
def test_the_elr_is_outside_the_isr_inside_the_assignment_and_empty_at_min_isr(isr_before, isr_after, elr_before,
                                                                             min_isr):
    elr_before -= isr_before
    elr = next_elr(isr_before=tuple(sorted(isr_before)), elr_before=tuple(sorted(elr_before)),
                   isr_after=tuple(sorted(isr_after)), min_isr=min_isr, replicas=REPLICAS)
    assert not set(elr) & isr_after
    assert set(elr) <= set(REPLICAS) and len(set(elr)) == len(elr)
    assert set(elr) <= isr_before | elr_before  # nobody becomes eligible from outside ISR and ELR
    if len(isr_after) >= min_isr:
        assert elr == ()
    else:
        assert set(elr) == (isr_before | elr_before) - isr_after


def test_an_eligible_elr_member_leads_when_no_isr_member_is_alive():
    assert offline_partition_leader(REPLICAS, (1,), {2, 3}, False, elr=(2,)) == OfflineElection(2, False,
                                                                                               from_elr=True)


def test_a_replica_in_neither_isr_nor_elr_never_leads_cleanly():
    assert offline_partition_leader(REPLICAS, (1,), {3}, False, elr=(2,)) == OfflineElection(None, False)


def test_a_clean_isr_member_comes_before_the_elr():
    assert offline_partition_leader(REPLICAS, (3,), {2, 3}, False, elr=(2,)) == OfflineElection(3, False)


def test_a_clean_elr_member_comes_before_an_isr_member_that_started_uncleanly_or_lost_records():
    assert offline_partition_leader(REPLICAS, (1,), {1, 2}, False, elr=(2,), unclean_started=(1,)).leader == 2
    assert offline_partition_leader(REPLICAS, (1,), {1, 2}, False, lost=(1,), elr=(2,)).leader == 2


def test_an_elr_member_that_lost_records_never_leads_from_the_elr():
    assert offline_partition_leader(REPLICAS, (1,), {1, 2, 3}, False, lost=(1, 2, 3), elr=(2, 3),
                                    unclean_started=(1, 2, 3)) == OfflineElection(None, False)
    assert offline_partition_leader(REPLICAS, (1,), {1, 2, 3}, True, lost=(1, 2, 3), elr=(2, 3),
                                    unclean_started=(1, 2, 3)) == OfflineElection(1, True, lossy=True)
    assert offline_partition_leader(REPLICAS, (1,), {2}, False, lost=(2,), elr=(2,)).leader is None


def test_the_kept_isr_member_after_an_unclean_start_leads_when_no_elr_member_can():
    # KIP-966's "last known leader": clean unless it reported lost records.
    assert offline_partition_leader(REPLICAS, (1,), {1, 3}, False, elr=(2,), unclean_started=(1,)) == \
        OfflineElection(1, False)
    assert offline_partition_leader(REPLICAS, (1,), {1, 3}, False, lost=(1,), elr=(2,), unclean_started=(1,)) == \
        OfflineElection(None, False), "one that lost records waits for the ELR member, or an unclean election"


def test_unclean_election_reaches_outside_isr_and_elr_only_when_allowed():
    assert offline_partition_leader(REPLICAS, (1,), {3}, True, elr=(2,)) == OfflineElection(3, True)
