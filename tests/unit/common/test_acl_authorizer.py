"""The ACL decision: which bindings apply, deny wins, allow needed, super users, implied describe."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replog.common.acls.core.authorizer import CACHE_ENTRIES_MAX, Authorizer
from replog.common.acls.core.model import AclBinding

ALICE, BOB = "User:alice", "User:bob"


def allow(principal, operation, name, pattern="literal", resource="topic"):
    return AclBinding(principal, resource, pattern, name, operation, "allow")


def deny(principal, operation, name, pattern="literal", resource="topic"):
    return AclBinding(principal, resource, pattern, name, operation, "deny")


def may(bindings, principal, operation, name, resource="topic", super_users=()):
    return Authorizer(super_users, bindings).authorize(principal, operation, resource, name)


def test_with_no_binding_nobody_may_do_anything():
    for operation in ("produce", "consume", "describe", "create", "alter", "delete"):
        assert not may([], ALICE, operation, "orders")
    assert not may([], ALICE, "cluster_admin", "replog-cluster", "cluster")


def test_a_literal_binding_names_one_topic_for_one_principal_and_operation():
    bindings = [allow(ALICE, "produce", "orders")]
    assert may(bindings, ALICE, "produce", "orders")
    assert not may(bindings, ALICE, "produce", "orders2")      # literal is not a prefix
    assert not may(bindings, ALICE, "consume", "orders")
    assert not may(bindings, BOB, "produce", "orders")


def test_the_wildcard_name_covers_every_topic_and_user_star_every_user():
    assert may([allow(ALICE, "consume", "*")], ALICE, "consume", "anything")
    assert may([allow("User:*", "consume", "orders")], BOB, "consume", "orders")
    assert not may([allow("User:*", "consume", "orders")], BOB, "consume", "payments")


def test_a_prefixed_binding_covers_the_names_that_start_with_it():
    bindings = [allow(ALICE, "produce", "orders.", "prefixed")]
    assert may(bindings, ALICE, "produce", "orders.eu")
    assert may(bindings, ALICE, "produce", "orders.")
    assert not may(bindings, ALICE, "produce", "orders")
    assert not may(bindings, ALICE, "produce", "payments.orders.eu")


def test_all_allows_every_operation():
    bindings = [allow(ALICE, "all", "orders")]
    for operation in ("produce", "consume", "describe", "create", "alter", "delete"):
        assert may(bindings, ALICE, operation, "orders")


def test_deny_wins_over_any_allow_however_broad_or_narrow_either_is():
    assert not may([allow(ALICE, "produce", "orders"), deny(ALICE, "produce", "orders")], ALICE, "produce", "orders")
    assert not may([allow(ALICE, "produce", "orders"), deny("User:*", "produce", "*")], ALICE, "produce", "orders")
    assert not may([allow(ALICE, "all", "*"), deny(ALICE, "produce", "ord", "prefixed")], ALICE, "produce", "orders")
    assert not may([allow(ALICE, "produce", "orders"), deny(ALICE, "all", "orders")], ALICE, "produce", "orders")
    # a deny of another operation, another topic or another user does not refuse
    assert may([allow(ALICE, "produce", "orders"), deny(ALICE, "consume", "orders")], ALICE, "produce", "orders")
    assert may([allow(ALICE, "produce", "orders"), deny(BOB, "produce", "orders")], ALICE, "produce", "orders")


def test_describe_is_implied_by_produce_consume_alter_and_delete_but_not_by_create():
    for operation in ("produce", "consume", "alter", "delete", "all"):
        assert may([allow(ALICE, operation, "orders")], ALICE, "describe", "orders"), operation
    assert not may([allow(ALICE, "create", "orders")], ALICE, "describe", "orders")
    assert may([allow(ALICE, "cluster_admin", "replog-cluster", resource="cluster")],
               ALICE, "describe", "replog-cluster", "cluster")


def test_a_deny_of_produce_does_not_deny_describe_but_a_deny_of_describe_does():
    assert may([allow(ALICE, "consume", "orders"), deny(ALICE, "produce", "orders")], ALICE, "describe", "orders")
    assert not may([allow(ALICE, "consume", "orders"), deny(ALICE, "describe", "orders")], ALICE, "describe", "orders")


def test_cluster_and_topic_bindings_do_not_cover_each_other():
    assert not may([allow(ALICE, "all", "*")], ALICE, "describe", "replog-cluster", "cluster")
    bindings = [allow(ALICE, "all", "replog-cluster", resource="cluster")]
    assert may(bindings, ALICE, "cluster_admin", "replog-cluster", "cluster")
    assert not may(bindings, ALICE, "produce", "orders")


def test_super_users_may_do_anything_even_when_denied():
    bindings = [deny("User:*", "all", "*"), deny("User:admin", "all", "replog-cluster", resource="cluster")]
    assert may(bindings, "User:admin", "produce", "orders", super_users=("User:admin",))
    assert may(bindings, "User:admin", "cluster_admin", "replog-cluster", "cluster", super_users=("User:admin",))
    assert not may(bindings, ALICE, "produce", "orders", super_users=("User:admin",))


def test_a_new_snapshot_drops_the_answers_cached_for_the_old_one():
    authorizer = Authorizer((), [])
    assert not authorizer.authorize(ALICE, "produce", "topic", "orders")  # now cached
    authorizer.replace([allow(ALICE, "produce", "orders")])
    assert authorizer.authorize(ALICE, "produce", "topic", "orders")
    authorizer.replace([allow(ALICE, "produce", "orders"), deny(ALICE, "produce", "*")])
    assert not authorizer.authorize(ALICE, "produce", "topic", "orders")


def test_the_cache_is_bounded():
    authorizer = Authorizer((), [allow(ALICE, "produce", "t", "prefixed")])
    for index in range(CACHE_ENTRIES_MAX + 10):
        assert authorizer.authorize(ALICE, "produce", "topic", f"t{index}")
    assert len(authorizer._snapshot.cache) <= CACHE_ENTRIES_MAX


def test_producing_somewhere_needs_an_allow_no_deny_covers():
    assert not Authorizer((), []).may_produce_somewhere(ALICE)
    assert Authorizer((), [allow(ALICE, "produce", "orders")]).may_produce_somewhere(ALICE)
    assert Authorizer((), [allow("User:*", "all", "o", "prefixed")]).may_produce_somewhere(ALICE)
    assert not Authorizer((), [allow(ALICE, "consume", "orders")]).may_produce_somewhere(ALICE)
    assert not Authorizer((), [allow(ALICE, "produce", "orders"), deny(ALICE, "produce", "ord", "prefixed")]
                          ).may_produce_somewhere(ALICE)
    assert not Authorizer((), [allow(ALICE, "produce", "orders"), deny("User:*", "all", "*")]
                          ).may_produce_somewhere(ALICE)
    assert Authorizer((), [allow(ALICE, "produce", "orders"), allow(ALICE, "produce", "pay", "prefixed"),
                           deny(ALICE, "produce", "orders")]).may_produce_somewhere(ALICE)
    assert Authorizer(("User:admin",), []).may_produce_somewhere("User:admin")


names = st.text(alphabet="ab.", min_size=1, max_size=4).filter(lambda n: n not in (".", ".."))
operations = st.sampled_from(["produce", "consume", "describe", "alter", "delete", "create", "all"])
principals = st.sampled_from([ALICE, BOB, "User:*"])


def bindings_of(permission):
    return st.builds(AclBinding, principals, st.just("topic"), st.sampled_from(["literal", "prefixed"]),
                     names | st.just("*"), operations, st.just(permission)).filter(
        lambda b: not (b.pattern_type == "prefixed" and b.resource_name == "*"))


any_bindings = st.lists(bindings_of("allow") | bindings_of("deny"), max_size=8)


@given(any_bindings, bindings_of("deny"), names, operations.filter(lambda o: o != "all"))
def test_adding_a_deny_never_allows_more(bindings, extra, topic, operation):
    if may(bindings + [extra], ALICE, operation, topic):
        assert may(bindings, ALICE, operation, topic)


@given(any_bindings, bindings_of("allow"), names, operations.filter(lambda o: o != "all"))
def test_adding_an_allow_never_allows_less(bindings, extra, topic, operation):
    if may(bindings, ALICE, operation, topic):
        assert may(bindings + [extra], ALICE, operation, topic)


@given(any_bindings, names, operations.filter(lambda o: o != "all"))
def test_the_answer_does_not_depend_on_the_order_of_the_bindings(bindings, topic, operation):
    assert may(bindings, ALICE, operation, topic) == may(list(reversed(bindings)), ALICE, operation, topic)
