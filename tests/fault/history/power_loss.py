"""The power-loss cells (issue 40): the matrix's workload and checker around a power loss.

A cell is a durability policy and a target: the durable mode (`flush.messages=1`) or the default (no fsync
per append), and the power of one broker (partition 0's leader), of every broker at once, or of every
broker and the ZooKeeper server. The brokers' log directories and ZooKeeper's data directory are
power-loss mounts (tests/fault/powerloss/): losing power drops every write not fsynced.

The workload runs, then stops and drains, and the cell waits until every broker's HW checkpoint holds
every partition's HW: a broker can count a loss only below the HW it checkpointed (docs/durability.md),
so only then must what the brokers report equal what the checker finds missing. The power goes, the
processes start again, a second workload writes, the cluster settles and the checker compares the
history with the final logs.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass

from replog.broker.log import HW_CHECKPOINT_FILE, read_offsets_checkpoint
from tests.integration.broker_helpers import create_topic, partition_state, wait_for

from . import checker
from .cells import DRAIN_S, SETTLE_TIMEOUT_S, read_final_logs, settle, written_since
from .history import History
from .workload import Workload

POLICIES = {"durable": {"flush.messages": "1"}, "default": {}}
TARGETS = ("one-broker", "every-broker", "every-broker-and-zookeeper")
BROKERS = (1, 2, 3)
PARTITIONS = 6
_LOSS = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+): lost (?P<count>\d+) committed records")


def power_loss_cells() -> list[tuple[str, str]]:
    """(fault, target) of every cell, in the matrix's naming (`power-loss-<policy>`)."""
    return [(f"power-loss-{policy}", target) for policy in POLICIES for target in TARGETS]


@dataclass
class PowerLossResult:
    topic: str
    targets: tuple[str, ...]
    report: checker.Report
    leaders: dict[int, int]  # partition -> its leader after the cluster settled


def run_power_loss_cell(cluster, zk, disks, history: History, policy: str, target: str, index: int, *,
                        load_s: float, lose_power, after_power_loss=None) -> PowerLossResult:
    """`lose_power(cluster, disks, names)` kills the processes, drops their unsynced writes and starts them;
    `after_power_loss(cluster, zk, topic)`, if given, runs before the second load (an operator's action)."""
    topic = f"cell{index}-rf3"
    partitions = {topic: PARTITIONS}
    create_topic(zk, topic, {p: tuple(BROKERS[(p + index + i) % 3] for i in range(3)) for p in range(PARTITIONS)},
                 {"min.insync.replicas": "2", **POLICIES[policy]})
    settle(cluster, zk, partitions)
    bootstrap = [p.address for p in cluster.of_role("broker")]
    run_load(history, bootstrap, partitions, load_s / 2, since_s=0.0, first_producer=0)
    _, high_watermarks = settle(cluster, zk, partitions)
    for broker_id in BROKERS:
        wait_for(lambda b=broker_id: checkpointed(cluster, b, high_watermarks), 30,
                 f"broker {broker_id}'s HW checkpoint to hold every partition's HW {high_watermarks}")
    targets = choose(zk, topic, target)
    history.mark("fault", time.monotonic())
    lose_power(cluster, disks, targets)
    if after_power_loss is not None:
        after_power_loss(cluster, zk, topic)
    healed_at = time.monotonic()
    history.mark("heal", healed_at)
    run_load(history, bootstrap, partitions, load_s / 2, since_s=healed_at, first_producer=3)
    _, high_watermarks = settle(cluster, zk, partitions)
    report = checker.check(history.events(), read_final_logs(bootstrap, high_watermarks))
    leaders = {p: partition_state(zk, topic, p).leader for p in range(PARTITIONS)}
    return PowerLossResult(topic, targets, report, leaders)


def run_load(history: History, bootstrap: list[str], partitions: dict[str, int], hold_s: float, *,
             since_s: float, first_producer: int) -> None:
    """The matrix's workload until every partition took a write after `since_s` and `hold_s` passed."""
    workload = Workload(history, bootstrap, partitions, first_producer=first_producer)
    workload.start()
    try:
        wait_for(lambda: written_since(history, partitions, since_s), SETTLE_TIMEOUT_S,
                 "every partition to take a write")
        threading.Event().wait(hold_s)  # the load's length, not a wait for a condition
    finally:
        workload.stop(DRAIN_S)


def checkpointed(cluster, broker_id: int, high_watermarks: dict[tuple[str, int], int]) -> bool:
    found = read_offsets_checkpoint(cluster.data_dir(f"broker-{broker_id}") / HW_CHECKPOINT_FILE)
    return all(found.get(tp) == hw for tp, hw in high_watermarks.items())


def choose(zk, topic: str, target: str) -> tuple[str, ...]:
    brokers = tuple(f"broker-{b}" for b in BROKERS)
    if target == "one-broker":
        return (f"broker-{partition_state(zk, topic, 0).leader}",)
    return brokers if target == "every-broker" else ("zookeeper", *brokers)


def reported_losses(log_text: str, topic: str) -> dict[int, int]:
    """partition -> the committed records a broker's log says its recovery could not find, for `topic`."""
    found = {}
    for line in log_text.splitlines():
        if not line.startswith("{"):
            continue
        match = _LOSS.match(json.loads(line).get("msg", ""))
        if match and match["topic"] == topic:
            found[int(match["partition"])] = int(match["count"])
    return found
