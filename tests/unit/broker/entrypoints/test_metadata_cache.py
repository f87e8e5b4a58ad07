"""The metadata cache: full and delta updates, never an older state, and the digest a controller confirms."""

from __future__ import annotations

from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.v1 import broker_control_pb2, common_pb2


def test_metadata_cache_full_and_delta_updates():
    cache = MetadataCache()
    state = broker_control_pb2.PartitionState(topic="a", partition=0, leader=1, leader_epoch=2, isr=[1, 2],
                                              replicas=[1, 2, 3])
    brokers = [common_pb2.BrokerEndpoint(broker_id=b, host="h", port=9000 + b) for b in (1, 2)]
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, live_brokers=brokers, partitions=[state],
                                                          full=True))
    reply = cache.metadata_response([])
    (topic,) = reply.topics
    assert reply.controller_id == 7 and topic.name == "a"
    assert list(topic.partitions[0].offline_replicas) == [3]
    assert cache.broker_address(2) == "h:9002" and cache.broker_address(3) is None
    offline = broker_control_pb2.PartitionState(topic="a", partition=1, leader=-1, leader_epoch=1, replicas=[3])
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, live_brokers=brokers, partitions=[offline]))
    partitions = cache.metadata_response(["a"]).topics[0].partitions
    assert [p.error_code for p in partitions] == [0, common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE]
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, live_brokers=brokers, deleted_topics=["a"]))
    assert cache.metadata_response(["a"]).topics[0].error_code == common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_cache_never_takes_a_partition_back_to_an_older_state():
    """A delta the controller gave up on (deadline) may be applied after a newer one."""
    cache = MetadataCache()

    def state(leader_epoch, partition_epoch, isr):
        return broker_control_pb2.PartitionState(topic="a", partition=0, leader=1, leader_epoch=leader_epoch,
                                                 partition_epoch=partition_epoch, isr=isr, replicas=[1, 2, 3])

    def delta(*states, full=False):
        cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=states, full=full))
        return list(cache.metadata_response(["a"]).topics[0].partitions[0].isr)

    assert delta(state(2, 5, [1, 2, 3])) == [1, 2, 3]
    assert delta(state(2, 4, [1, 2])) == [1, 2, 3]  # older partition epoch: ignored
    assert delta(state(1, 9, [1])) == [1, 2, 3]  # older leader epoch: ignored
    assert delta(state(2, 6, [1, 3])) == [1, 3]
    assert delta(state(3, 0, [1])) == [1]  # a higher leader epoch is newer, whatever its partition epoch
    assert delta(state(1, 0, [1, 2]), full=True) == [1, 2]  # a full update is the whole truth


def test_metadata_cache_confirms_by_a_digest_kept_current_through_deltas_and_deletions():
    from replog.common import state_digest

    cache = MetadataCache()

    def state(topic, partition, leader_epoch, partition_epoch, isr):
        return broker_control_pb2.PartitionState(topic=topic, partition=partition, leader=isr[0],
                                                 leader_epoch=leader_epoch, partition_epoch=partition_epoch, isr=isr,
                                                 replicas=[1, 2, 3])

    def confirmed(*expected):
        digest = state_digest.Digest.of(state_digest.metadata_term(
            s.topic, s.partition, s.leader, s.leader_epoch, s.partition_epoch, s.isr, s.replicas,
            s.adding_replicas, s.removing_replicas) for s in expected)
        return cache.confirm(broker_control_pb2.UpdateMetadataRequest(controller_id=7,
                                                                      metadata_digest=digest.encode()))

    a0, a1, b0 = state("a", 0, 1, 1, [1, 2, 3]), state("a", 1, 1, 1, [2, 3]), state("b", 0, 4, 2, [3])
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=[a0, a1, b0], full=True))
    cache.refresh_digest(limit=1)  # the background folds a bounded share; a confirm folds the rest
    assert confirmed(a0, a1, b0) and not confirmed(a0, a1)
    newer = state("a", 1, 2, 1, [3])
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=[newer, state("a", 0, 0, 9, [1])]))
    assert confirmed(a0, newer, b0)  # the older state of a-0 was ignored, and left the digest alone
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, deleted_topics=["a"]))
    assert confirmed(b0)
    cache.update(broker_control_pb2.UpdateMetadataRequest(controller_id=7, partitions=[a0], full=True))
    assert confirmed(a0)
