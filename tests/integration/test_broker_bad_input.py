"""Bad input gets a typed error and changes nothing on disk: wrong CRC, oversized
batch, unknown topic, negative offset, bad acks, a replica fetch from a broker
outside the assignment, a zombie controller, broken idempotent sequences, too
few in-sync replicas."""

from __future__ import annotations

import pytest

from replog.common.security.principal import Principal
from replog.devcluster import ClusterSpec
from replog.v1 import (
    broker_control_pb2,
    broker_control_pb2_grpc,
    common_pb2,
    log_pb2,
    replication_pb2,
    replication_pb2_grpc,
)

from .broker_helpers import (
    batch_of,
    create_topic,
    describe,
    log_stub,
    produce_raw,
    wait_caught_up,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)
from .tls_helpers import channel_as

pytestmark = pytest.mark.integration

E = common_pb2
MESSAGE_MAX_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("broker-bad-input"))
    cluster = factory(ClusterSpec(controllers=1, gateways=0,
                                  extra_args={"broker": ["--message-max-bytes", str(MESSAGE_MAX_BYTES)]}))
    with zk_session(cluster) as zk:
        create_topic(zk, "strict", {0: (1, 2)}, {"min.insync.replicas": "2"})
        create_topic(zk, "needs-three", {0: (1, 2)}, {"min.insync.replicas": "3"})
        wait_for_leader(cluster, zk, "strict", 1, 30, followers=(2,))
        wait_for_leader(cluster, zk, "needs-three", 1, 30)
        wait_for_isr(cluster, zk, "strict", {1, 2}, 30)
    first = produce_raw(cluster, 1, "strict", batch_of([b"good-1", b"good-2"]))
    assert first.error_code == E.ERROR_CODE_NONE, first
    wait_caught_up(cluster, (1, 2), "strict", 2, 10)
    yield cluster
    factory.teardown()


@pytest.fixture
def unchanged(cluster):
    """Asserts, after the test, that neither replica's log of `strict` moved."""
    before = [(d.log_end_offset, d.size_bytes) for d in (describe(cluster, b, "strict") for b in (1, 2))]
    yield
    after = [(d.log_end_offset, d.size_bytes) for d in (describe(cluster, b, "strict") for b in (1, 2))]
    assert after == before


def flip_byte(batch: bytes, position: int) -> bytes:
    data = bytearray(batch)
    data[position] ^= 0xFF
    return bytes(data)


def test_wrong_crc_is_corrupt_record(cluster, unchanged):
    batch = batch_of([b"payload"])
    answer = produce_raw(cluster, 1, "strict", flip_byte(batch, len(batch) - 2))
    assert answer.error_code == E.ERROR_CODE_CORRUPT_RECORD and "CRC" in answer.error_message


def test_truncated_and_trailing_garbage_batches_are_corrupt(cluster, unchanged):
    batch = batch_of([b"payload"])
    assert produce_raw(cluster, 1, "strict", batch[:-5]).error_code == E.ERROR_CODE_CORRUPT_RECORD
    assert produce_raw(cluster, 1, "strict", batch + b"junk").error_code == E.ERROR_CODE_CORRUPT_RECORD
    assert produce_raw(cluster, 1, "strict", b"not a batch at all").error_code == E.ERROR_CODE_CORRUPT_RECORD


def test_oversized_batch_is_record_too_large(cluster, unchanged):
    answer = produce_raw(cluster, 1, "strict", batch_of([b"x" * (MESSAGE_MAX_BYTES + 1)]))
    assert answer.error_code == E.ERROR_CODE_RECORD_TOO_LARGE


def test_unknown_topic_and_partition(cluster, unchanged):
    batch = batch_of([b"payload"])
    assert produce_raw(cluster, 1, "no-such-topic", batch).error_code == E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
    assert produce_raw(cluster, 1, "strict", batch, partition=7).error_code == E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
    reply = log_stub(cluster, 1).Fetch(log_pb2.FetchRequest(partitions=[
        log_pb2.FetchPartition(topic="no-such-topic", partition=0, fetch_offset=0, current_leader_epoch=-1)]),
        timeout=5)
    assert reply.partitions[0].error_code == E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION


def test_producing_to_a_follower_is_not_leader(cluster, unchanged):
    assert produce_raw(cluster, 2, "strict", batch_of([b"payload"])).error_code == E.ERROR_CODE_NOT_LEADER


def test_negative_and_past_end_offsets_are_out_of_range(cluster, unchanged):
    stub = log_stub(cluster, 1)
    for offset in (-1, 3):
        reply = stub.Fetch(log_pb2.FetchRequest(max_wait_ms=0, partitions=[
            log_pb2.FetchPartition(topic="strict", partition=0, fetch_offset=offset, current_leader_epoch=-1)]),
            timeout=5)
        assert reply.partitions[0].error_code == E.ERROR_CODE_OFFSET_OUT_OF_RANGE, offset
    # Between the HW and the LEO is empty, not an error: here HW == LEO == 2, so offset 2 is the end.
    reply = stub.Fetch(log_pb2.FetchRequest(max_wait_ms=0, partitions=[
        log_pb2.FetchPartition(topic="strict", partition=0, fetch_offset=2, current_leader_epoch=-1)]), timeout=5)
    assert reply.partitions[0].error_code == E.ERROR_CODE_NONE and reply.partitions[0].records == b""


def test_bad_acks_is_invalid_required_acks(cluster, unchanged):
    for acks in (2, -2, 5):
        answer = produce_raw(cluster, 1, "strict", batch_of([b"payload"]), acks=acks)
        assert answer.error_code == E.ERROR_CODE_INVALID_REQUIRED_ACKS, acks


def test_records_and_batch_together_or_neither_are_invalid(cluster, unchanged):
    stub = log_stub(cluster, 1)
    both = stub.Produce(log_pb2.ProduceRequest(acks=1, partitions=[log_pb2.ProducePartitionData(
        topic="strict", partition=0, record_batch=batch_of([b"a"]), records=[common_pb2.Record(value=b"b")])]),
        timeout=5)
    neither = stub.Produce(log_pb2.ProduceRequest(acks=1, partitions=[log_pb2.ProducePartitionData(
        topic="strict", partition=0)]), timeout=5)
    assert both.partitions[0].error_code == E.ERROR_CODE_INVALID_REQUEST
    assert neither.partitions[0].error_code == E.ERROR_CODE_INVALID_REQUEST


def as_broker(cluster, broker_id: int) -> replication_pb2_grpc.ReplicationServiceStub:
    """Broker 1's replication service, called with broker `broker_id`'s certificate."""
    address = cluster.processes["broker-1"].address
    channel = channel_as(cluster, Principal("broker", str(broker_id)), address)
    return replication_pb2_grpc.ReplicationServiceStub(channel)


def as_controller(cluster) -> broker_control_pb2_grpc.BrokerControlServiceStub:
    """Broker 1's control service, called with controller 1's certificate."""
    address = cluster.processes["broker-1"].address
    return broker_control_pb2_grpc.BrokerControlServiceStub(channel_as(cluster, Principal("controller", "1"), address))


def test_replica_fetch_from_a_broker_outside_the_assignment(cluster, unchanged):
    stub = as_broker(cluster, 3)
    leader_epoch = describe(cluster, 1, "strict").leader_epoch
    reply = stub.ReplicaFetch(replication_pb2.ReplicaFetchRequest(
        replica_id=3, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
        partitions=[replication_pb2.ReplicaFetchPartition(topic="strict", partition=0,
                                                          current_leader_epoch=leader_epoch, fetch_offset=0,
                                                          last_fetched_epoch=-1)]), timeout=5)
    assert reply.partitions[0].error_code == E.ERROR_CODE_NOT_ASSIGNED_REPLICA
    assert reply.partitions[0].records == b""


def test_replica_fetch_with_a_fetcher_id_out_of_range_is_invalid(cluster, unchanged):
    # Each fetcher id opens a session of its own at the leader: ids without bound would let one
    # follower pile up sessions parked on every partition.
    stub = as_broker(cluster, 2)
    for fetcher_id, fetcher_count in ((-1, 1), (16, 17), (1 << 30, 0), (0, -2), (0, 17)):
        reply = stub.ReplicaFetch(replication_pb2.ReplicaFetchRequest(
            replica_id=2, fetcher_id=fetcher_id, fetcher_count=fetcher_count, max_wait_ms=0, min_bytes=1,
            max_bytes=1 << 20,
            partitions=[replication_pb2.ReplicaFetchPartition(topic="strict", partition=0, fetch_offset=0,
                                                              last_fetched_epoch=-1)]), timeout=5)
        assert reply.error_code == E.ERROR_CODE_INVALID_REQUEST
        assert f"fetcher id {fetcher_id} (of {fetcher_count}) is out of range" in reply.error_message
        assert not reply.partitions


def test_a_fetch_stream_answers_each_bad_request_in_turn_and_stays_open(cluster, unchanged):
    """Refused requests on a ReplicaFetchStream each get their typed answer; the stream goes on. (A stream
    speaking for another broker than its certificate's is refused before: test_tls_refusals.py.)"""
    leader_epoch = describe(cluster, 1, "strict").leader_epoch

    def fetch(replica_id: int) -> replication_pb2.ReplicaFetchStreamRequest:
        return replication_pb2.ReplicaFetchStreamRequest(fetch=replication_pb2.ReplicaFetchRequest(
            replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
            partitions=[replication_pb2.ReplicaFetchPartition(topic="strict", partition=0,
                                                              current_leader_epoch=leader_epoch, fetch_offset=0,
                                                              last_fetched_epoch=-1)]))

    own = [r.fetch for r in as_broker(cluster, 1).ReplicaFetchStream(iter([fetch(1), fetch(1)]), timeout=10)]
    assert [a.error_code for a in own] == [E.ERROR_CODE_INVALID_REQUEST] * 2  # a leader does not follow itself
    assert all("may not fetch" in a.error_message for a in own)
    out_of_range = fetch(3)
    out_of_range.fetch.fetcher_id = 99
    answers = [r.fetch for r in as_broker(cluster, 3).ReplicaFetchStream(iter([out_of_range, fetch(3)]), timeout=10)]
    assert answers[0].error_code == E.ERROR_CODE_INVALID_REQUEST and "out of range" in answers[0].error_message
    assert answers[1].error_code == E.ERROR_CODE_NONE
    assert answers[1].partitions[0].error_code == E.ERROR_CODE_NOT_ASSIGNED_REPLICA
    assert answers[1].partitions[0].records == b""


def test_stale_controller_epoch_is_refused_and_changes_nothing(cluster, unchanged):
    stub = as_controller(cluster)
    before = describe(cluster, 1, "strict")
    # A zombie controller (epoch 0, below the seated controller's) tells broker 1 to follow broker 2.
    reply = stub.LeaderAndIsr(broker_control_pb2.LeaderAndIsrRequest(
        controller_id=9, controller_epoch=0, partitions=[broker_control_pb2.PartitionState(
            topic="strict", partition=0, leader=2, leader_epoch=before.leader_epoch + 5, isr=[2],
            partition_epoch=99, replicas=[1, 2])]), timeout=5)
    assert reply.error_code == E.ERROR_CODE_STALE_CONTROLLER_EPOCH
    stop = stub.StopReplica(broker_control_pb2.StopReplicaRequest(
        controller_id=9, controller_epoch=0, partitions=[broker_control_pb2.StopReplicaPartition(
            topic="strict", partition=0, leader_epoch=-1, delete=True)]), timeout=5)
    assert stop.error_code == E.ERROR_CODE_STALE_CONTROLLER_EPOCH
    after = describe(cluster, 1, "strict")
    assert after.leader and after.leader_epoch == before.leader_epoch


def test_stale_broker_epoch_is_refused(cluster, unchanged):
    stub = as_controller(cluster)
    reply = stub.StopReplica(broker_control_pb2.StopReplicaRequest(
        controller_id=1, controller_epoch=1, broker_epoch=1, partitions=[broker_control_pb2.StopReplicaPartition(
            topic="strict", partition=0, leader_epoch=-1, delete=True)]), timeout=5)
    assert reply.error_code == E.ERROR_CODE_STALE_BROKER_EPOCH
    assert describe(cluster, 1, "strict").leader


def test_idempotent_sequences(cluster):
    stub = log_stub(cluster, 1)
    ids = stub.InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1), timeout=5)
    other = stub.InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1), timeout=5)
    assert ids.error_code == E.ERROR_CODE_NONE and other.producer_id != ids.producer_id
    pid, epoch = ids.producer_id, ids.producer_epoch
    first = produce_raw(cluster, 1, "strict", batch_of([b"i0", b"i1"], producer_id=pid, producer_epoch=epoch,
                                                       base_sequence=0))
    assert first.error_code == E.ERROR_CODE_NONE
    end = describe(cluster, 1, "strict").log_end_offset
    retry = produce_raw(cluster, 1, "strict", batch_of([b"i0", b"i1"], producer_id=pid, producer_epoch=epoch,
                                                       base_sequence=0))
    assert retry.error_code == E.ERROR_CODE_NONE and retry.base_offset == first.base_offset
    gap = produce_raw(cluster, 1, "strict", batch_of([b"i5"], producer_id=pid, producer_epoch=epoch, base_sequence=5))
    assert gap.error_code == E.ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER
    unknown = produce_raw(cluster, 1, "strict", batch_of([b"u"], producer_id=other.producer_id, producer_epoch=0,
                                                         base_sequence=3))
    assert unknown.error_code == E.ERROR_CODE_UNKNOWN_PRODUCER_ID
    assert describe(cluster, 1, "strict").log_end_offset == end


def test_not_enough_replicas_before_append_and_acks_one_still_works(cluster):
    refused = produce_raw(cluster, 1, "needs-three", batch_of([b"x"]), acks=-1)
    assert refused.error_code == E.ERROR_CODE_NOT_ENOUGH_REPLICAS
    assert describe(cluster, 1, "needs-three").log_end_offset == 0
    assert produce_raw(cluster, 1, "needs-three", batch_of([b"x"]), acks=1).error_code == E.ERROR_CODE_NONE
    assert describe(cluster, 1, "needs-three").log_end_offset == 1
