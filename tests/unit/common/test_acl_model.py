"""The ACL model's rules for bindings and filters, and the ACL znodes' JSON."""

from __future__ import annotations

import json

import pytest

from replog.common.acls.core.model import AclBinding, AclFilter, binding_problem, filter_problem, parse_principals
from replog.common.acls.settings import principal_list
from replog.common.zk import schema


def binding(principal="User:alice", resource_type="topic", pattern_type="literal", name="orders",
            operation="produce", permission="allow"):
    return AclBinding(principal, resource_type, pattern_type, name, operation, permission)


@pytest.mark.parametrize("good", [
    binding(), binding(principal="User:*"), binding(name="*"), binding(pattern_type="prefixed", name="orders."),
    binding(resource_type="cluster", name="replog-cluster", operation="cluster_admin"),
    binding(resource_type="cluster", name="replog-cluster", operation="create", permission="deny"),
    binding(resource_type="group", name="billing", operation="consume"),
    binding(resource_type="group", pattern_type="prefixed", name="billing.", operation="delete"),
])
def test_valid_bindings_have_no_problem(good):
    assert binding_problem(good) is None


@pytest.mark.parametrize("bad, words", [
    (binding(principal=""), "principal is empty"),
    (binding(principal="alice"), "User:<name>"),
    (binding(principal="Group:ops"), "User:<name>"),
    (binding(principal="User:"), "User:<name>"),
    (binding(principal="User:a,b"), "','"),
    (binding(principal="User: alice"), "spaces"),
    (binding(operation="write"), "unknown operation 'write'"),
    (binding(operation="cluster_admin"), "does not apply to a topic"),
    (binding(resource_type="cluster", name="replog-cluster", operation="produce"), "does not apply to a cluster"),
    (binding(resource_type="cluster", name="other"), "'replog-cluster'"),
    (binding(resource_type="cluster", pattern_type="prefixed", name="replog-cluster"), "'replog-cluster'"),
    (binding(resource_type="transactional_id"), "unknown resource type"),
    (binding(resource_type="group", operation="produce"), "does not apply to a group"),
    (binding(resource_type="group", name="a b", operation="consume"), "group id or prefix"),
    (binding(pattern_type="match"), "unknown pattern type"),
    (binding(pattern_type="prefixed", name="*"), "'*' is a literal pattern"),
    (binding(name=""), "empty"),
    (binding(name="a/b"), "may only hold"),
    (binding(pattern_type="prefixed", name="."), "cannot be"),
    (binding(name="x" * 250), "longer than"),
    (binding(permission="maybe"), "unknown permission"),
])
def test_invalid_bindings_are_named_with_what_is_wrong(bad, words):
    problem = binding_problem(bad)
    assert problem is not None and words in problem, problem


def test_filters_match_by_every_field_they_set():
    bindings = [binding(), binding(principal="User:bob"), binding(pattern_type="prefixed", name="ord"),
                binding(name="*", permission="deny"), binding(name="payments", operation="consume")]
    assert [b for b in bindings if AclFilter().matches(b)] == bindings
    assert [b.principal for b in bindings if AclFilter(principal="User:bob").matches(b)] == ["User:bob"]
    assert [b for b in bindings if AclFilter(resource_name="orders").matches(b)] == bindings[:2]
    assert [b for b in bindings if AclFilter(permission="deny").matches(b)] == [bindings[3]]
    assert [b for b in bindings if AclFilter(pattern_type="prefixed").matches(b)] == [bindings[2]]


def test_a_match_filter_finds_every_binding_that_applies_to_a_resource():
    bindings = [binding(), binding(name="*"), binding(pattern_type="prefixed", name="ord"),
                binding(pattern_type="prefixed", name="pay"), binding(name="orders2")]
    found = [b for b in bindings if AclFilter(pattern_type="match", resource_name="orders").matches(b)]
    assert found == bindings[:3]


@pytest.mark.parametrize("bad, words", [
    (AclFilter(operation="write"), "unknown operation"),
    (AclFilter(principal="alice"), "User:<name>"),
    (AclFilter(pattern_type="match"), "needs the resource name"),
    (AclFilter(resource_type="transactional_id"), "unknown resource type"),
    (AclFilter(permission="perhaps"), "unknown permission"),
])
def test_invalid_filters_are_named(bad, words):
    problem = filter_problem(bad)
    assert problem is not None and words in problem, problem


def test_super_users_are_a_comma_separated_list_of_principals():
    assert parse_principals("User:admin, User:ops,") == ("User:admin", "User:ops")
    assert parse_principals("") == ()
    assert principal_list("User:admin,User:ops") is None
    assert "User:<name>" in principal_list("admin")


def test_acl_znodes_hold_a_sorted_entry_list_and_round_trip():
    record = schema.AclResourceRecord((schema.AclEntry("User:bob", "consume", "deny"),
                                       schema.AclEntry("User:alice", "produce", "allow")))
    path = schema.acl_resource_path("topic", "prefixed", "orders.")
    assert path == "/acls/topic/prefixed/orders."
    assert schema.parse_acl_resource_path(path) == ("topic", "prefixed", "orders.")
    assert schema.parse_acl_resource_path("/acls/topic") is None
    assert json.loads(record.encode()) == {"version": 1, "acls": [
        {"principal": "User:alice", "operation": "produce", "permission": "allow"},
        {"principal": "User:bob", "operation": "consume", "permission": "deny"}]}
    assert set(schema.AclResourceRecord.decode(record.encode(), path).entries) == set(record.entries)
    assert schema.AclChangeMarker.decode(schema.AclChangeMarker(5).encode()).changed_at_ms == 5


@pytest.mark.parametrize("data", [b'{"version":1}', b'{"version":1,"acls":[{"principal":"User:a"}]}', b"[]", b"x"])
def test_acl_znodes_of_another_shape_are_refused(data):
    with pytest.raises(schema.ZkDataError):
        schema.AclResourceRecord.decode(data, "/acls/topic/literal/t")
