"""The ACL questions of the gRPC edge: a refusal names who, what and which resource, and is logged
once per (principal, operation, resource); super users pass."""

from __future__ import annotations

import logging

from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.core.model import AclBinding
from replog.common.acls.enforcement import Enforcer


def enforcer() -> Enforcer:
    return Enforcer(Authorizer(("User:admin",), [AclBinding("User:alice", "topic", "literal", "orders", "produce",
                                                            "allow")]))


def test_an_allowed_user_passes_and_a_refused_one_is_told_who_what_and_where():
    guard = enforcer()
    assert guard.refusal("User:alice", "produce", "topic", ["orders"]) is None
    message = guard.refusal("User:alice", "produce", "topic", ["orders", "payments"])
    assert "User:alice" in message and "produce" in message and "'payments'" in message
    assert "replog acls add --allow-principal User:alice --operation produce --topic payments" in message


def test_super_users_pass_and_allows_answers_without_logging(caplog):
    guard = enforcer()
    caplog.set_level(logging.WARNING, logger="replog.common.acls.enforcement")
    assert guard.refusal("User:admin", "consume", "topic", ["anything"]) is None
    assert not guard.allows("User:bob", "describe", "topic", "orders")
    assert not caplog.records


def test_a_refusal_is_logged_once_per_principal_operation_and_resource(caplog):
    guard = enforcer()
    caplog.set_level(logging.WARNING, logger="replog.common.acls.enforcement")
    for _ in range(3):
        for topic in ("a", "b"):
            assert guard.refusal("User:bob", "consume", "topic", [topic]) is not None
    assert len(caplog.records) == 2
