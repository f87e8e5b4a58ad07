"""Client quotas as stored and as applied: the znode names of users, the JSON of a quota, and which rate
holds a user (its own of each type, else the default's)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.common.quotas.core.model import QuotaRecord, QuotaSnapshot, principal_problem, rate_problem
from replog.common.zk import schema
from replog.common.zk.schema.client_quotas import decode_user_node, encode_user_name
from replog.common.zk.schema.codec import ZkDataError

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@given(names)
def test_every_user_name_has_one_znode_name_that_reads_back_as_it(name):
    node = encode_user_name(name)
    assert decode_user_node(node) == name
    assert "/" not in node and node not in (".", "..", schema.DEFAULT_USER_NODE)
    assert schema.parse_quota_user_node(node) == f"User:{name}"
    assert schema.quota_user_path(f"User:{name}") == f"{schema.QUOTA_USERS}/{node}"


@pytest.mark.parametrize("node", ["%61lice", "a%2fb", "%2", "%zz", "%FF", ".", "", "a b"])
def test_a_znode_name_no_writer_makes_is_refused(node):
    with pytest.raises(ZkDataError):
        decode_user_node(node)


def test_names_read_as_kafka_s_sanitized_ones_and_the_default_has_its_own_node():
    assert encode_user_name("alice") == "alice"
    assert encode_user_name("ops.team-1_a") == "ops.team-1_a"
    assert encode_user_name("CN=x,O=y") == "CN%3Dx%2CO%3Dy"
    assert encode_user_name("..") == "%2E%2E"
    assert encode_user_name("<default>") == "%3Cdefault%3E"
    assert schema.quota_user_path(None) == "/config/quotas/users/<default>"
    assert schema.parse_quota_user_node("<default>") is None


def test_a_quota_record_round_trips_and_a_missing_rate_is_not_set():
    record = QuotaRecord(producer_byte_rate=1048576)
    assert record.encode() == b'{"producer_byte_rate":1048576,"version":1}'
    assert QuotaRecord.decode(record.encode(), "p") == record
    assert QuotaRecord.decode(b'{"version":1,"consumer_byte_rate":5,"request_percentage":7}', "p") == \
        QuotaRecord(consumer_byte_rate=5)  # a key a later version may add is ignored


@pytest.mark.parametrize("data, message", [
    (b'{"version":1,"producer_byte_rate":"10"}', "'producer_byte_rate' must be an integer"),
    (b'{"version":1,"producer_byte_rate":true}', "'producer_byte_rate' must be an integer"),
    (b'{"version":1,"consumer_byte_rate":0}', "'consumer_byte_rate' must be at least 1"),
    (b'[]', "expected a JSON object"),
])
def test_a_malformed_quota_record_is_refused_naming_the_problem(data, message):
    with pytest.raises(ZkDataError, match=message):
        QuotaRecord.decode(data, "/config/quotas/users/alice")


def test_a_user_s_own_quota_of_a_type_wins_over_the_default_s_each_type_on_its_own():
    snapshot = QuotaSnapshot({None: QuotaRecord(100, 200), "User:alice": QuotaRecord(producer_byte_rate=10),
                              "User:bob": QuotaRecord()})
    assert snapshot.rate("producer_byte_rate", "User:alice") == 10
    assert snapshot.rate("consumer_byte_rate", "User:alice") == 200
    assert snapshot.effective("User:carol") == QuotaRecord(100, 200)
    assert snapshot.effective("User:bob") == QuotaRecord(100, 200)
    assert "User:bob" not in snapshot.entries  # an entity with no quota is no entry
    assert not snapshot.empty


def test_with_no_default_only_users_with_their_own_quota_are_held():
    snapshot = QuotaSnapshot({"User:alice": QuotaRecord(consumer_byte_rate=10)})
    assert snapshot.rate("consumer_byte_rate", "User:alice") == 10
    assert snapshot.rate("producer_byte_rate", "User:alice") is None
    assert snapshot.rate("consumer_byte_rate", "User:admin") is None
    assert QuotaSnapshot().empty and QuotaSnapshot({None: QuotaRecord()}).empty


def test_the_rules_of_a_quota_name_the_bad_value():
    assert "User:* is not one user" in principal_problem("User:*")
    assert "not of the form User:<name>" in principal_problem("alice")
    assert principal_problem("User:alice") is None
    assert "out of range" in rate_problem("producer_byte_rate", 0)
    assert "out of range" in rate_problem("consumer_byte_rate", 2**53)
    assert "unknown quota type 'request_percentage'" in rate_problem("request_percentage", 5)
    assert rate_problem("producer_byte_rate", 1) is None
