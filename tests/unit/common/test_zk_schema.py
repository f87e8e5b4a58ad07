"""The ZooKeeper schema: Kafka-compatible shapes that round-trip, strict decoding."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.common.zk import schema


def test_paths_follow_the_documented_layout():
    assert schema.broker_path(3) == "/brokers/ids/3"
    assert schema.topic_path("orders") == "/brokers/topics/orders"
    assert schema.partition_state_path("orders", 7) == "/brokers/topics/orders/partitions/7/state"
    assert schema.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert schema.topic_config_path("orders") == "/config/topics/orders"


def test_watched_paths_are_named_by_what_they_hold():
    assert schema.parse_topic_path(schema.topic_path("orders")) == ("assignment", "orders", None)
    assert schema.parse_topic_path(schema.partition_state_path("orders", 12)) == ("state", "orders", 12)
    assert schema.parse_topic_path(schema.topic_config_path("orders")) == ("config", "orders", None)
    for other in (schema.partitions_path("orders"), schema.partition_path("orders", 3), schema.TOPICS,
                  schema.CONFIG_TOPICS, schema.broker_path(1), "/brokers/topics/t/partitions/x/state"):
        assert schema.parse_topic_path(other) is None, other


def test_partition_state_has_kafkas_shape():
    record = schema.PartitionStateRecord(leader=2, leader_epoch=5, isr=(2, 3), controller_epoch=4)
    assert json.loads(record.encode()) == {
        "version": 1, "controller_epoch": 4, "leader": 2, "leader_epoch": 5, "isr": [2, 3]
    }
    assert schema.PartitionStateRecord.decode(record.encode()) == record


def test_partition_state_after_an_unclean_election_records_its_leader_epoch():
    record = schema.PartitionStateRecord(leader=3, leader_epoch=6, isr=(3,), controller_epoch=4, unclean_leader_epoch=6)
    assert json.loads(record.encode())["unclean_leader_epoch"] == 6
    assert record.encode() == b'{"controller_epoch":4,"isr":[3],"leader":3,"leader_epoch":6,"unclean_leader_epoch":6,' \
                              b'"version":1}'
    assert schema.PartitionStateRecord.decode(record.encode()) == record
    # A state written before the field existed has had no unclean election.
    assert schema.PartitionStateRecord.decode(b'{"version":1,"leader":1,"leader_epoch":1,"isr":[1],'
                                              b'"controller_epoch":1}').unclean_leader_epoch == -1


def test_partition_state_carries_its_eligible_leader_replicas_only_when_it_has_some():
    record = schema.PartitionStateRecord(leader=-1, leader_epoch=6, isr=(1,), controller_epoch=4, elr=(2, 3))
    assert record.encode() == b'{"controller_epoch":4,"elr":[2,3],"isr":[1],"leader":-1,"leader_epoch":6,"version":1}'
    assert schema.PartitionStateRecord.decode(record.encode()) == record
    assert b"elr" not in schema.PartitionStateRecord(1, 6, (1, 2), 4).encode()
    # A state written before the field existed (an older controller) has no ELR.
    assert schema.PartitionStateRecord.decode(b'{"version":1,"leader":1,"leader_epoch":1,"isr":[1],'
                                              b'"controller_epoch":1}').elr == ()


replica_lists = st.lists(st.integers(0, 1000), min_size=1, max_size=5, unique=True).map(tuple)


@given(st.dictionaries(st.integers(0, 500), replica_lists, min_size=1, max_size=20),
       st.dictionaries(st.integers(0, 500), replica_lists, max_size=3))
def test_topic_assignment_round_trips(partitions, adding):
    assignment = schema.TopicAssignment(partitions=partitions, adding_replicas=adding)
    assert schema.TopicAssignment.decode("t", assignment.encode()) == assignment


def test_broker_registration_round_trips_with_and_without_rack():
    for rack in ("rack-a", None):
        registration = schema.BrokerRegistration(4, "10.0.0.4", 9092, rack, 9999, 123)
        assert schema.BrokerRegistration.decode(4, registration.encode()) == registration


def test_broker_registration_carries_the_partitions_it_lost_committed_records_of():
    registration = schema.BrokerRegistration(4, "10.0.0.4", 9092, None, 9999, 123, (("orders", 0), ("audit", 2)))
    decoded = schema.BrokerRegistration.decode(4, registration.encode())
    assert sorted(decoded.lost_partitions) == [("audit", 2), ("orders", 0)]
    older = json.loads(registration.encode())
    del older["lost_committed_records"]  # a broker from before the field
    assert schema.BrokerRegistration.decode(4, json.dumps(older).encode()).lost_partitions == ()
    assert not schema.BrokerRegistration.decode(4, json.dumps(older).encode()).unclean_start
    older["lost_committed_records"] = [{"topic": "orders"}]
    with pytest.raises(schema.ZkDataError, match="lost_committed_records"):
        schema.BrokerRegistration.decode(4, json.dumps(older).encode())


def test_broker_registration_carries_its_log_dirs_and_the_offline_ones():
    registration = schema.BrokerRegistration(4, "10.0.0.4", 9092, None, 9999, 123, (), ("/d1", "/d2"), ("/d2",),
                                             (("orders", 1),))
    decoded = schema.BrokerRegistration.decode(4, registration.encode())
    assert decoded.log_dirs == ("/d1", "/d2") and decoded.offline_log_dirs == ("/d2",)
    assert decoded.offline_partitions == (("orders", 1),)
    older = json.loads(registration.encode())
    for key in ("log_dirs", "offline_log_dirs", "offline_partitions"):
        del older[key]  # a broker from before the fields
    assert schema.BrokerRegistration.decode(4, json.dumps(older).encode()).offline_partitions == ()
    older["offline_log_dirs"] = "/d2"
    with pytest.raises(schema.ZkDataError, match="offline_log_dirs"):
        schema.BrokerRegistration.decode(4, json.dumps(older).encode())


def test_broker_registration_says_whether_it_started_without_the_clean_shutdown_marker():
    registration = schema.BrokerRegistration(4, "10.0.0.4", 9092, None, 9999, 123, unclean_start=True)
    assert schema.BrokerRegistration.decode(4, registration.encode()).unclean_start
    wrong = {**json.loads(registration.encode()), "unclean_start": "yes"}
    with pytest.raises(schema.ZkDataError, match="unclean_start"):
        schema.BrokerRegistration.decode(4, json.dumps(wrong).encode())


def test_broker_registration_carries_its_default_min_insync_replicas_and_an_older_one_reads_as_1():
    registration = schema.BrokerRegistration(4, "10.0.0.4", 9092, None, 9999, 123, min_insync_replicas_default=2)
    assert json.loads(registration.encode())["min_insync_replicas"] == 2
    assert schema.BrokerRegistration.decode(4, registration.encode()) == registration
    older = json.loads(registration.encode())
    del older["min_insync_replicas"]  # a broker from before the field
    assert schema.BrokerRegistration.decode(4, json.dumps(older).encode()).min_insync_replicas_default == 1
    for wrong in (0, "2", True, None):
        with pytest.raises(schema.ZkDataError, match="min_insync_replicas"):
            schema.BrokerRegistration.decode(4, json.dumps({**older, "min_insync_replicas": wrong}).encode())


def test_reassignment_request_uses_kafkas_file_format():
    request = schema.ReassignmentRequest({("t", 0): (1, 2, 3), ("t", 1): (2, 3, 4)})
    decoded = json.loads(request.encode())
    assert decoded == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 3]},
        {"topic": "t", "partition": 1, "replicas": [2, 3, 4]},
    ]}
    assert schema.ReassignmentRequest.decode(request.encode()) == request


@pytest.mark.parametrize(
    "data, message",
    [
        (b"not json", "not JSON"),
        (b"[1,2]", "expected a JSON object"),
        (b'{"leader":1}', "missing integer 'version'"),
        (b'{"version":1,"leader":"x","leader_epoch":1,"isr":[1],"controller_epoch":1}', "'leader' must be an integer"),
        (b'{"version":1,"leader":1,"leader_epoch":1,"isr":"1","controller_epoch":1}', "'isr' must be a list"),
        (b'{"version":1,"leader":1,"leader_epoch":1,"isr":[1],"controller_epoch":1,"unclean_leader_epoch":"2"}',
         "'unclean_leader_epoch' must be an integer"),
        (b'{"version":1,"leader":1,"leader_epoch":1,"isr":[1],"controller_epoch":1,"elr":[2,"3"]}',
         "'elr' must be a list of integers"),
    ],
)
def test_malformed_partition_state_is_refused_with_the_reason(data, message):
    with pytest.raises(schema.ZkDataError, match=message):
        schema.PartitionStateRecord.decode(data, "/brokers/topics/t/partitions/0/state")


def test_duplicate_partitions_in_a_reassignment_are_refused():
    data = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}'
    with pytest.raises(schema.ZkDataError, match="listed twice"):
        schema.ReassignmentRequest.decode(data)


def test_controller_epoch_is_plain_decimal_text():
    assert schema.encode_controller_epoch(12) == b"12"
    assert schema.decode_controller_epoch(b"12") == 12
    with pytest.raises(schema.ZkDataError):
        schema.decode_controller_epoch(b"twelve")
