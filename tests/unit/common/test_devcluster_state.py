"""The local cluster's saved state (`.state/cluster.json`), which tools and users read to find the processes:
each broker's entry carries the port of its Kafka listener (docs/kafka-compatibility.md), the port the
broker is started with, and keeps it across restarts."""

from __future__ import annotations

import json

from replog.devcluster import ClusterSpec, LocalCluster


def test_each_broker_entry_in_cluster_json_carries_its_kafka_port(tmp_path):
    cluster = LocalCluster(tmp_path, ClusterSpec(controllers=1, brokers=3, gateways=1))
    cluster._plan()
    saved = json.loads((tmp_path / "cluster.json").read_text())["processes"]

    brokers = {name: entry for name, entry in saved.items() if entry["role"] == "broker"}
    assert sorted(brokers) == ["broker-1", "broker-2", "broker-3"]
    kafka_ports = [entry["kafka_port"] for entry in brokers.values()]
    assert all(port > 0 for port in kafka_ports) and len(set(kafka_ports)) == 3
    assert not set(kafka_ports) & {entry["port"] for entry in saved.values()}  # apart from every gRPC port
    for entry in brokers.values():
        command = entry["command"]
        assert command[command.index("--kafka-port") + 1] == str(entry["kafka_port"])
    assert all(entry["kafka_port"] == 0 for entry in saved.values() if entry["role"] != "broker")

    reloaded = LocalCluster(tmp_path)  # `replog-local` run again, e.g. for `up` after `stop`
    assert {p.name: p.kafka_port for p in reloaded.of_role("broker")} == {
        name: entry["kafka_port"] for name, entry in brokers.items()}


def test_the_zookeeper_server_gets_the_heap_its_spec_names(tmp_path):
    default = LocalCluster(tmp_path / "default", ClusterSpec(controllers=1, brokers=1, gateways=0))
    default._plan()
    large = LocalCluster(tmp_path / "large", ClusterSpec(controllers=1, brokers=1, gateways=0, zookeeper_heap_mb=3584))
    large._plan()

    def heap_flags(cluster) -> list[str]:
        return [arg for arg in cluster.processes["zookeeper"].command if arg.startswith("-Xmx")]

    assert heap_flags(default) == ["-Xmx512m"]
    assert heap_flags(large) == ["-Xmx3584m"]
