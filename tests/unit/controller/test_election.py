"""Leader elections: one-line rules, assignment order first."""

from replog.controller.core.election import (
    OfflineElection,
    controlled_shutdown_leader,
    offline_partition_leader,
    preferred_leader,
    reassignment_leader,
)


def test_offline_election_takes_the_first_eligible_isr_member_in_assignment_order():
    assert offline_partition_leader((1, 2, 3), isr=(3, 2), eligible={2, 3}, unclean_allowed=False) \
        == OfflineElection(2, False)


def test_offline_election_skips_isr_members_that_are_not_eligible():
    assert offline_partition_leader((1, 2, 3), isr=(1, 2), eligible={2, 3}, unclean_allowed=False).leader == 2


def test_offline_election_without_eligible_isr_member_finds_nobody_when_unclean_is_off():
    assert offline_partition_leader((1, 2, 3), isr=(1,), eligible={2, 3}, unclean_allowed=False) \
        == OfflineElection(None, False)


def test_offline_election_falls_back_to_any_eligible_replica_when_unclean_is_on_and_says_so():
    assert offline_partition_leader((1, 2, 3), isr=(1,), eligible={3, 2}, unclean_allowed=True) \
        == OfflineElection(2, True)


def test_unclean_is_never_used_while_a_clean_leader_exists():
    assert offline_partition_leader((1, 2, 3), isr=(3,), eligible={2, 3}, unclean_allowed=True) \
        == OfflineElection(3, False)


def test_offline_election_with_nobody_alive():
    assert offline_partition_leader((1, 2), isr=(1, 2), eligible=set(), unclean_allowed=True) \
        == OfflineElection(None, False)


def test_reassignment_election_looks_only_at_the_target_replicas():
    assert reassignment_leader(target=(4, 5), isr=(1, 5, 4), eligible={1, 4, 5}) == 4
    assert reassignment_leader(target=(4, 5), isr=(1, 5), eligible={1, 4, 5}) == 5
    assert reassignment_leader(target=(4, 5), isr=(1,), eligible={1, 4, 5}) is None


def test_preferred_election_only_ever_picks_the_first_replica():
    assert preferred_leader((2, 1, 3), isr=(1, 2), eligible={1, 2, 3}) == 2
    assert preferred_leader((2, 1, 3), isr=(1, 3), eligible={1, 2, 3}) is None
    assert preferred_leader((2, 1, 3), isr=(1, 2), eligible={1, 3}) is None


def test_controlled_shutdown_election_avoids_every_shutting_down_broker():
    assert controlled_shutdown_leader((1, 2, 3), isr=(1, 2, 3), live={1, 2, 3}, shutting_down={1, 2}) == 3
    assert controlled_shutdown_leader((1, 2, 3), isr=(1, 2), live={1, 2, 3}, shutting_down={1}) == 2
    assert controlled_shutdown_leader((1, 2, 3), isr=(1, 2), live={1, 3}, shutting_down={1}) is None


def test_offline_election_skips_isr_members_that_lost_committed_records_while_another_can_lead():
    assert offline_partition_leader((1, 2, 3), isr=(1, 2), eligible={1, 2}, unclean_allowed=False, lost={1}) \
        == OfflineElection(2, unclean=False, lossy=False)


def test_an_isr_member_that_lost_records_leads_only_in_an_unclean_election_and_says_so():
    assert offline_partition_leader((1, 2, 3), isr=(1,), eligible={1, 2, 3}, unclean_allowed=False, lost={1}) \
        == OfflineElection(None, unclean=False), "no replica holds every committed record: offline"
    assert offline_partition_leader((1, 2, 3), isr=(1,), eligible={1, 2, 3}, unclean_allowed=True, lost={1}) \
        == OfflineElection(1, unclean=True, lossy=True), "the last ISR member comes first in an unclean election"
