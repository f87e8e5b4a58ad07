"""`ZkClient.connect`, in-process: a service waits for ZooKeeper with it, as long as ZooKeeper
takes, saying so at a bounded rate, and ends the wait at once when told to stop.
(test_foundation.py starts each service without ZooKeeper; tests/fault/test_zookeeper_outage_start.py
runs whole services through an outage.)"""

from __future__ import annotations

import logging
import subprocess
import threading
import time

import pytest

from replog.common.zk.client import ZkClient
from replog.devcluster import zookeeper
from replog.devcluster.ports import free_port
from tests.integration.controller_helpers import wait_for

pytestmark = pytest.mark.integration

REPORT_INTERVAL_S = 0.5


def waiting_messages(caplog) -> list[str]:
    """The reports of a wait in progress (not the one that says it was stopped)."""
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(("waiting", "still waiting"))]


def test_connect_waits_saying_so_at_a_bounded_rate_and_ends_when_stopped(caplog):
    connect = f"127.0.0.1:{free_port()}"  # nobody listens here
    zk = ZkClient(connect, connect_backoff_max_ms=200)
    stopping = threading.Event()
    caplog.set_level(logging.INFO)
    waited = {}

    def run():
        waited["joined"] = zk.connect(stopping, report_interval_s=REPORT_INTERVAL_S)

    waiter = threading.Thread(target=run)
    started_s = time.monotonic()
    waiter.start()
    try:
        wait_for(lambda: len(waiting_messages(caplog)) >= 3, 30, "three reports of the wait")
        stopping.set()
        stopped_s = time.monotonic()
        waiter.join(timeout=10)
        assert not waiter.is_alive() and waited["joined"] is False
        assert time.monotonic() - stopped_s < 2, "a stop must end the wait at once"
    finally:
        stopping.set()
        waiter.join(timeout=10)
        zk.stop()
    elapsed_s = stopped_s - started_s
    first, *again = waiting_messages(caplog)
    assert first.startswith(f"waiting for ZooKeeper at {connect}: no answer yet")
    assert all(m.startswith(f"still waiting for ZooKeeper at {connect} after") for m in again)
    # Attempts are at most 0.2 s (and jitter) apart; the reports come every REPORT_INTERVAL_S only.
    assert len(again) <= elapsed_s / REPORT_INTERVAL_S + 1, waiting_messages(caplog)
    per_attempt = [r for r in caplog.records if r.name == "kazoo.client" and r.levelno >= logging.WARNING]
    assert len(per_attempt) <= 1, [r.getMessage() for r in per_attempt]


def test_connect_joins_once_zookeeper_comes_up(tmp_path, caplog):
    port = free_port()
    zk = ZkClient(f"127.0.0.1:{port}")
    stopping = threading.Event()
    caplog.set_level(logging.INFO)
    waited = {}
    waiter = threading.Thread(target=lambda: waited.update(joined=zk.connect(stopping)))
    waiter.start()
    server = None
    try:
        wait_for(lambda: waiting_messages(caplog), 30, "the wait to be reported")
        config = zookeeper.write_config(tmp_path, port)
        with open(tmp_path / "zookeeper.log", "wb") as log:
            server = subprocess.Popen(zookeeper.zookeeper_command(config), stdout=log, stderr=subprocess.STDOUT)
        waiter.join(timeout=60)
        assert waited.get("joined") is True
        zk.ensure_layout()
        assert zk.children("/") != []
        assert any(m.startswith(f"reached ZooKeeper at 127.0.0.1:{port} after") for m in
                   (r.getMessage() for r in caplog.records))
    finally:
        stopping.set()
        waiter.join(timeout=10)
        zk.stop()
        if server is not None:
            server.kill()
            server.wait()
