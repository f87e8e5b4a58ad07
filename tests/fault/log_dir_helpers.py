"""What the log-directory tests read back from a real cluster: every partition's records from its current
leader, `replog cluster describe`, and a broker's `replog_broker_log_dir_online` gauge."""

from __future__ import annotations

import json
import urllib.request

from replog.cli.main import main
from replog.v1 import common_pb2, log_pb2
from tests.integration.broker_helpers import log_stub, partition_state, wait_for, wait_for_leader


def read_back(cluster, zk, topic: str, partition: int, brokers: tuple[int, ...]) -> list[bytes]:
    """Every record of the partition, fetched from its leader (one of `brokers`) once it says it leads."""
    state = wait_for(lambda: (s := partition_state(zk, topic, partition)) and s.leader in brokers and s, 60,
                     f"a leader of {topic}-{partition}")
    wait_for_leader(cluster, zk, topic, state.leader, 60, partition=partition)
    reply = log_stub(cluster, state.leader).Fetch(log_pb2.FetchRequest(
        partitions=[log_pb2.FetchPartition(topic=topic, partition=partition, fetch_offset=0, current_leader_epoch=-1)],
        max_bytes=1 << 20, decode_records=True), timeout=20)
    (answer,) = reply.partitions
    assert answer.error_code == common_pb2.ERROR_CODE_NONE, answer
    return [record.value for record in answer.decoded_records]


def in_order_within(wanted: list[bytes], found: list[bytes]) -> bool:
    remaining = iter(found)
    return all(value in remaining for value in wanted)


def log_dir_online(cluster, broker_id: int, path) -> float:
    port = cluster.processes[f"broker-{broker_id}"].metrics_port
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    prefix = f'replog_broker_log_dir_online{{log_dir="{path}"}} '
    (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(line.split()[-1])


def describe(cluster, capsys) -> dict:
    capsys.readouterr()
    assert main(["--gateway", cluster.gateway_address, "-o", "json", "cluster", "describe"]) == 0
    return json.loads(capsys.readouterr().out)
