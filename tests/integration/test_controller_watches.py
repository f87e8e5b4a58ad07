"""The new controller's watches against a real ZooKeeper: the broker list they read before the
seat's snapshot is not queued behind its Startup (it would make a broker that registered in
between look dead); changes after that are."""

from __future__ import annotations

import threading

import pytest

from replog.common.zk import schema
from replog.controller.adapters.watches import Watches
from replog.controller.core import events as ev

from .controller_helpers import wait_for

pytestmark = pytest.mark.integration


def register(zk, broker_id: int) -> None:
    path = schema.broker_path(broker_id)
    zk.kazoo.create(path, schema.BrokerRegistration(broker_id, "h", 9000 + broker_id).encode(), ephemeral=True,
                    acl=zk.acl(path))  # the ACL the broker itself gives it, which the controller checks


def test_only_broker_changes_after_the_start_are_queued(zk_client):
    zk = zk_client
    register(zk, 1)
    queued: list = []
    lock = threading.Lock()

    def enqueue(event, **_):
        with lock:
            queued.append(event)
        return True

    watches = Watches(zk, enqueue)
    watches.start()
    try:
        with lock:
            assert not [e for e in queued if isinstance(e, ev.BrokersChanged)]
        register(zk, 2)
        changed = wait_for(lambda: [e for e in list(queued) if isinstance(e, ev.BrokersChanged)], 10,
                           "the registration's event")
        assert set(changed[-1].live) == {1, 2}
    finally:
        watches.close()
