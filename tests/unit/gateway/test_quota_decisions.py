"""AlterClientQuotas and DescribeClientQuotas decisions: what is refused (whole, naming the bad part), what
each alteration writes, version-checked, and what a describe lists."""

from __future__ import annotations

import pytest

from replog.common.quotas.core.model import QuotaRecord
from replog.gateway.core.quotas import (
    NO_ZNODE,
    Alteration,
    QuotaOp,
    QuotaWrite,
    Stored,
    check_alterations,
    described,
    plan_alter,
)
from replog.common.topic_admin.core.refusal import Refusal, Status

P, C = "producer_byte_rate", "consumer_byte_rate"


def alice(*ops: QuotaOp) -> Alteration:
    return Alteration("User:alice", False, ops)


def default(*ops: QuotaOp) -> Alteration:
    return Alteration("", True, ops)


def set_(quota_type: str | None, value: int) -> QuotaOp:
    return QuotaOp(quota_type, value, False)


def remove(quota_type: str, value: int = 0) -> QuotaOp:
    return QuotaOp(quota_type, value, True)


def test_setting_and_removing_writes_each_entity_once_with_the_version_read():
    stored = {"User:alice": Stored(QuotaRecord(100, 200), 4)}
    change = plan_alter(stored, check_alterations([alice(set_(P, 150), remove(C)), default(set_(C, 1000))]))
    assert change.writes == (QuotaWrite("User:alice", QuotaRecord(150, None), 4),
                             QuotaWrite(None, QuotaRecord(None, 1000), NO_ZNODE))
    assert change.entries == (("User:alice", QuotaRecord(150, None)), (None, QuotaRecord(None, 1000)))


def test_removing_the_last_quota_deletes_the_entity_and_a_change_to_nothing_writes_nothing():
    stored = {"User:alice": Stored(QuotaRecord(100, None), 2)}
    assert plan_alter(stored, check_alterations([alice(remove(P))])).writes == (
        QuotaWrite("User:alice", QuotaRecord(), 2),)
    assert plan_alter(stored, check_alterations([alice(set_(P, 100), remove(C))])).writes == ()
    assert plan_alter({}, check_alterations([default(remove(P))])).writes == ()


@pytest.mark.parametrize("alterations, words", [
    ([], "needs at least one alteration"),
    ([Alteration("User:alice", True, (set_(P, 1),))], "not both"),
    ([Alteration("", False, (set_(P, 1),))], "name a user (principal User:<name>) or the default"),
    ([Alteration("alice", False, (set_(P, 1),))], "not of the form User:<name>"),
    ([Alteration("User:*", False, (set_(P, 1),))], "User:* is not one user"),
    ([alice(set_(P, 1)), alice(set_(C, 1))], "alteration 1 (User:alice): the entity is altered twice"),
    ([alice()], "alteration 0 (User:alice): no op"),
    ([default(set_(None, 5))], "alteration 0 (the default), op 0: no quota type"),
    ([alice(set_(P, 1), remove(P))], "op 1: producer_byte_rate is changed twice"),
    ([alice(remove(C, 7))], "a removal of consumer_byte_rate takes no value (found 7)"),
    ([alice(set_(P, 0))], "producer_byte_rate 0 is out of range: a rate is 1 to 9007199254740991 bytes per second"),
    ([alice(set_(C, -5))], "consumer_byte_rate -5 is out of range"),
])
def test_a_bad_alteration_is_refused_whole_naming_what_is_wrong(alterations, words):
    with pytest.raises(Refusal) as refused:
        check_alterations(alterations)
    assert refused.value.status is Status.INVALID_ARGUMENT
    assert words in refused.value.message and "nothing was changed" in refused.value.message.lower()


def test_a_describe_lists_the_default_first_and_with_a_user_what_applies_to_it():
    stored = {"User:bob": Stored(QuotaRecord(5, None), 1), None: Stored(QuotaRecord(100, 200), 1),
              "User:alice": Stored(QuotaRecord(None, 7), 3)}
    entries, effective = described(stored, None, named=False)
    assert [e for e, _ in entries] == [None, "User:alice", "User:bob"] and effective is None
    entries, effective = described(stored, "User:alice", named=True)
    assert entries == [("User:alice", QuotaRecord(None, 7))] and effective == QuotaRecord(100, 7)
    entries, effective = described(stored, "User:carol", named=True)
    assert entries == [] and effective == QuotaRecord(100, 200)
    assert described(stored, None, named=True) == ([(None, QuotaRecord(100, 200))], None)
