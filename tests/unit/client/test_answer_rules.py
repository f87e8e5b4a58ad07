"""The producer's verdict on a batch's answer (answer_rules.decide_answer), the rule the sender and the
broker simulation share."""

from __future__ import annotations

import pytest

from replog.client.answer_rules import RETRIABLE, SEQUENCE_GAP, Verdict, decide_answer
from replog.common.error_codes import ErrorCode


def verdict(code, *, idempotent=True, earlier_unfinished=False, deadline_passed=False):
    return decide_answer(code, idempotent=idempotent, earlier_unfinished=earlier_unfinished,
                         deadline_passed=deadline_passed)


@pytest.mark.parametrize("code", [ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER])
def test_a_written_batch_is_delivered_even_past_its_deadline(code):
    assert verdict(code) is Verdict.DELIVERED
    assert verdict(code, deadline_passed=True) is Verdict.DELIVERED


@pytest.mark.parametrize("code", sorted(RETRIABLE))
def test_a_retriable_answer_is_retried_until_the_deadline(code):
    assert verdict(code) is Verdict.RETRY
    assert verdict(code, idempotent=False) is Verdict.RETRY
    assert verdict(code, deadline_passed=True) is Verdict.FAIL


def test_a_lost_answer_is_retriable():
    assert verdict(ErrorCode.BROKER_NOT_AVAILABLE) is Verdict.RETRY


def test_a_throttled_refusal_waits_for_the_throttle_then_fails_past_the_deadline():
    assert verdict(ErrorCode.THROTTLING_QUOTA_EXCEEDED) is Verdict.RETRY_AFTER_THROTTLE
    assert verdict(ErrorCode.THROTTLING_QUOTA_EXCEEDED, deadline_passed=True) is Verdict.FAIL


@pytest.mark.parametrize("code", sorted(SEQUENCE_GAP))
def test_a_sequence_gap_is_retried_only_behind_an_earlier_unfinished_batch_of_an_idempotent_producer(code):
    assert verdict(code, earlier_unfinished=True) is Verdict.RETRY
    assert verdict(code, earlier_unfinished=False) is Verdict.FAIL, "the gap is real"
    assert verdict(code, earlier_unfinished=True, deadline_passed=True) is Verdict.FAIL
    assert verdict(code, idempotent=False, earlier_unfinished=True) is Verdict.FAIL, "no sequence, no gap of its own"


@pytest.mark.parametrize("code", [ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.RECORD_TOO_LARGE,
                                  ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.CORRUPT_RECORD])
def test_any_other_answer_fails(code):
    assert verdict(code, earlier_unfinished=True) is Verdict.FAIL


def test_every_error_code_gets_a_verdict():
    for code in ErrorCode:
        for flags in range(8):
            assert isinstance(verdict(code, idempotent=bool(flags & 1), earlier_unfinished=bool(flags & 2),
                                      deadline_passed=bool(flags & 4)), Verdict)
