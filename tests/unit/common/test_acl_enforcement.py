"""The gRPC edge of the ACLs: services pass, users are checked, a refusal names who, what and
which resource, and is logged once per (principal, operation, resource)."""

from __future__ import annotations

import logging

import grpc
import pytest

from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.core.model import AclBinding
from replog.common.acls.enforcement import Caller, Enforcer


class Aborted(Exception):
    pass


class FakeContext:
    def __init__(self, caller: Caller) -> None:
        self.caller = caller
        self.status = None

    def abort(self, status, message):
        self.status, self.message = status, message
        raise Aborted(message)


def enforcer(enabled=True):
    authorizer = Authorizer(("User:admin",), [AclBinding("User:alice", "topic", "literal", "orders", "produce",
                                                         "allow")])
    return Enforcer(authorizer, enabled=enabled, caller=lambda context: context.caller)


def test_an_allowed_user_passes_and_a_refused_one_is_told_who_what_and_where():
    guard = enforcer()
    guard.check(FakeContext(Caller("User:alice", False)), "produce", "topic", ["orders"])
    context = FakeContext(Caller("User:alice", False))
    with pytest.raises(Aborted):
        guard.check(context, "produce", "topic", ["orders", "payments"])
    assert context.status == grpc.StatusCode.PERMISSION_DENIED
    assert "User:alice" in context.message and "produce" in context.message and "'payments'" in context.message


def test_services_super_users_and_a_service_without_enforcement_pass():
    guard = enforcer()
    guard.check(FakeContext(Caller("broker:2", True)), "consume", "topic", ["anything"])
    guard.check(FakeContext(Caller("User:admin", False)), "consume", "topic", ["anything"])
    enforcer(enabled=False).check(FakeContext(Caller("User:nobody", False)), "consume", "topic", ["anything"])


def test_a_refusal_is_logged_once_per_principal_operation_and_resource(caplog):
    guard = enforcer()
    caplog.set_level(logging.WARNING, logger="replog.common.acls.enforcement")
    for _ in range(3):
        for topic in ("a", "b"):
            with pytest.raises(Aborted):
                guard.check(FakeContext(Caller("User:bob", False)), "consume", "topic", [topic])
    assert len(caplog.records) == 2
