"""docs/clients.md's examples run as written against a real cluster (its broker addresses put in)."""

from __future__ import annotations

import re
from pathlib import Path

from replog.devcluster import ClusterSpec

from .broker_helpers import wait_for_isr, zk_session
from .controller_helpers import create_topic

PAGE = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
BOOTSTRAP_LINE = re.compile(r"^bootstrap = \[.*$", re.MULTILINE)


def test_the_client_docs_examples_run(cluster_factory, capsys):
    cluster = cluster_factory(ClusterSpec(controllers=1, brokers=3, gateways=0))
    try:
        with zk_session(cluster) as zk:
            create_topic(zk, "orders", {p: tuple((p + i) % 3 + 1 for i in range(3)) for p in range(6)},
                         {"min.insync.replicas": "2"})
            for p in range(6):
                wait_for_isr(cluster, zk, "orders", {1, 2, 3}, 60, partition=p)
        bootstrap = [p.address for p in cluster.of_role("broker")]
        examples = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
        assert len(examples) == 4  # producing, consuming, consuming in a group, TLS
        for example in examples:
            assert BOOTSTRAP_LINE.search(example), "each example names its brokers in one `bootstrap = [...]` line"
            exec(compile(BOOTSTRAP_LINE.sub(f"bootstrap = {bootstrap!r}", example), str(PAGE), "exec"), {})
    finally:
        cluster.discard()
    printed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("written at") for line in printed)
    assert sum(1 for line in printed if " b'order " in line) == 1000  # the consumer printed every order
    assert "5" in printed
    assert "assigned 6 partitions" in printed
    assert any(line.startswith("processed ") and line.endswith("committed True") for line in printed)
    assert printed[-1] == "1"  # the record sent over mutual TLS, read back
