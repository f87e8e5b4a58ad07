"""The bound on partitions per request covers real methods, counts what they name, and admits the
controller's largest requests."""

from replog.broker.config import BrokerConfig, request_bytes_max
from replog.broker.entrypoints.partition_counts import PARTITION_COUNTS
from replog.v1 import broker_control_pb2, log_pb2, replication_pb2

MODULES = (broker_control_pb2, log_pb2, replication_pb2)


def method(path: str):
    service_name, method_name = path.strip("/").split("/")
    for module in MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            if service.full_name == service_name:
                return service.methods_by_name[method_name]
    raise AssertionError(f"no method {path}")


def test_every_counted_method_exists_and_its_counter_reads_its_request():
    for path, count in PARTITION_COUNTS.items():
        request_class = method(path).input_type._concrete_class
        assert count(request_class()) == 0, path


def test_a_100k_partition_controller_request_is_within_both_bounds():
    config = BrokerConfig()
    partitions = 100_000
    request = broker_control_pb2.LeaderAndIsrRequest(controller_epoch=1, init=True, partitions=[
        broker_control_pb2.PartitionState(topic="t" * 249, partition=p, leader=1, leader_epoch=1 << 20,
                                          isr=[1, 2, 3], partition_epoch=1 << 20, replicas=[1, 2, 3])
        for p in range(partitions)])
    assert PARTITION_COUNTS["/replog.v1.BrokerControlService/LeaderAndIsr"](request) <= config.request_partitions_max
    assert request.ByteSize() < request_bytes_max(config)


def test_the_receive_limit_follows_the_largest_batch_and_the_partition_bound():
    small = BrokerConfig(request_partitions_max=1000, message_max_bytes=64 * 1024)
    assert request_bytes_max(small) == 1000 * 320 + 1024 * 1024
    big_batches = BrokerConfig(request_partitions_max=1000, message_max_bytes=100 * 1024 * 1024)
    assert request_bytes_max(big_batches) == 101 * 1024 * 1024
