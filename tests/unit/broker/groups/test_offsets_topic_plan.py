"""The offsets topic a broker creates: the configured partition count, the replication factor capped
at the live brokers (and said so), racks used only when every broker has one, records kept forever."""

from __future__ import annotations

import random

from replog.broker.groups.core.offsets_topic import plan_offsets_topic


def test_three_brokers_get_the_configured_topic_with_three_replicas_each():
    plan = plan_offsets_topic({1: "a", 2: "b", 3: "c"}, 12, 3, random.Random(7))
    assert sorted(plan.assignment) == list(range(12))
    assert all(sorted(replicas) == [1, 2, 3] for replicas in plan.assignment.values())
    assert not plan.capped and plan.configs == {"cleanup.policy": "compact", "retention.ms": "-1"}


def test_the_replication_factor_is_capped_at_the_live_brokers():
    plan = plan_offsets_topic({4: None, 9: None}, 5, 3, random.Random(1))
    assert plan.capped and (plan.replication_factor, plan.replication_factor_asked) == (2, 3)
    assert all(sorted(replicas) == [4, 9] for replicas in plan.assignment.values())


def test_racks_on_some_brokers_only_are_ignored_rather_than_refused():
    plan = plan_offsets_topic({1: "a", 2: None, 3: "c"}, 6, 3, random.Random(3))
    assert len(plan.assignment) == 6 and all(len(set(r)) == 3 for r in plan.assignment.values())


def test_no_live_broker_means_no_plan_yet():
    assert plan_offsets_topic({}, 12, 3, random.Random(0)) is None
