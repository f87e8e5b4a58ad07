"""Helpers for tests against a 3-server ZooKeeper ensemble: which server holds a session (the
`cons` four-letter word), which one leads (`srvr`), and an ensemble without replog services."""

from __future__ import annotations

import re

from replog.devcluster import ClusterSpec, zookeeper

ENSEMBLE_ONLY = ClusterSpec(controllers=0, brokers=0, gateways=0, zookeeper_servers=3)


def server_of_session(cluster, session_id: int) -> str | None:
    """The name of the running server that holds a connection of session `session_id`, if any."""
    wanted = re.compile(rf"sid=0x0*{session_id:x}[,)]")
    for info in cluster.of_role("zookeeper"):
        if not cluster.is_running(info.name):
            continue
        answer = cluster.zookeeper_word(info.name, "cons") or ""
        if wanted.search(answer):
            return info.name
    return None


def leader(cluster) -> str | None:
    """The name of the server that says it leads the ensemble, if one does."""
    for info in cluster.of_role("zookeeper"):
        if cluster.is_running(info.name) and zookeeper.mode("127.0.0.1", info.port, cluster.zookeeper_tls) == "leader":
            return info.name
    return None


def serving(cluster) -> list[str]:
    """The servers that serve clients now (standalone, leader or follower)."""
    return [info.name for info in cluster.of_role("zookeeper")
            if cluster.is_running(info.name) and zookeeper.mode("127.0.0.1", info.port, cluster.zookeeper_tls) is not None]
