"""CreateAcls and DeleteAcls decisions: what each writes, per resource pattern, version-checked."""

from __future__ import annotations

import pytest

from replog.common.acls.core.model import AclBinding, AclFilter
from replog.gateway.core.acls import (
    NO_ZNODE,
    AclWrite,
    Stored,
    check_bindings,
    check_filters,
    describe,
    plan_create,
    plan_delete,
)
from replog.common.topic_admin.core.refusal import Refusal, Status


def b(principal="User:alice", name="orders", operation="produce", permission="allow", pattern="literal"):
    return AclBinding(principal, "topic", pattern, name, operation, permission)


def test_creating_writes_one_znode_per_pattern_with_the_version_read():
    stored = {("topic", "literal", "orders"): Stored(frozenset({b()}), 3)}
    creation = plan_create(stored, [b(), b(operation="consume"), b(name="pay", pattern="prefixed")])
    assert creation.writes == (
        AclWrite(("topic", "literal", "orders"), (b(operation="consume"), b()), 3),
        AclWrite(("topic", "prefixed", "pay"), (b(name="pay", pattern="prefixed"),), NO_ZNODE),
    )
    assert creation.created == (b(operation="consume"), b(name="pay", pattern="prefixed"))
    assert creation.already_present == (b(),)


def test_creating_what_is_stored_already_writes_nothing():
    stored = {("topic", "literal", "orders"): Stored(frozenset({b()}), 3)}
    assert plan_create(stored, [b(), b()]).writes == ()


def test_deleting_rewrites_what_is_left_and_deletes_an_emptied_pattern():
    stored = {("topic", "literal", "orders"): Stored(frozenset({b(), b(principal="User:bob")}), 1),
              ("topic", "literal", "pay"): Stored(frozenset({b(name="pay")}), 7)}
    deletion = plan_delete(stored, [AclFilter(principal="User:alice")])
    assert deletion.writes == (AclWrite(("topic", "literal", "orders"), (b(principal="User:bob"),), 1),
                               AclWrite(("topic", "literal", "pay"), (), 7))
    assert deletion.deleted == (b(), b(name="pay"))
    assert plan_delete(stored, [AclFilter(principal="User:carol")]).writes == ()


def test_a_binding_matching_any_filter_is_deleted():
    stored = {("topic", "literal", "orders"): Stored(frozenset({b(), b(operation="consume"), b(operation="alter")}), 0)}
    deletion = plan_delete(stored, [AclFilter(operation="produce"), AclFilter(operation="consume")])
    assert deletion.deleted == (b(operation="consume"), b())
    assert describe(stored, AclFilter(operation="alter")) == [b(operation="alter")]


def test_bad_requests_name_the_bad_binding_or_filter():
    with pytest.raises(Refusal) as refused:
        check_bindings([b(), b(operation="write")])
    assert refused.value.status is Status.INVALID_ARGUMENT
    assert refused.value.message.startswith("binding 1: unknown operation 'write'")
    with pytest.raises(Refusal):
        check_bindings([])
    with pytest.raises(Refusal) as refused:
        check_filters([], at_least_one=True)
    assert "at least one filter" in refused.value.message
    with pytest.raises(Refusal) as refused:
        check_filters([AclFilter(), AclFilter(permission="maybe")], at_least_one=True)
    assert refused.value.message.startswith("filter 1: unknown permission 'maybe'")
    check_filters([AclFilter()], at_least_one=False)
