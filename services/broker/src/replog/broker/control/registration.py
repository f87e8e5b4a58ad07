"""Broker registration: the ephemeral /brokers/ids/<id> znode.

Its creation zxid (czxid) is the broker epoch: a restarted broker gets a new
one, so requests addressed to an older registration can be told apart.
"""

from __future__ import annotations

import logging
import time

from kazoo.exceptions import NodeExistsError

from replog.common.service import StartupError
from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)


def register_broker(zk: ZkClient, registration: schema.BrokerRegistration, wait_s: float) -> int:
    """Create the ephemeral registration; returns the broker epoch (czxid).

    A znode left by this broker's previous session disappears when that session
    expires, so wait up to `wait_s` for it before giving up with a clear reason.
    """
    path = schema.broker_path(registration.broker_id)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            zk.kazoo.create(path, registration.encode(), ephemeral=True, acl=zk.acl(path))
            _, stat = zk.kazoo.get(path)
            log.info("registered %s (broker epoch %d)", path, stat.czxid)
            return stat.czxid
        except NodeExistsError:
            existing = zk.get(path)
            if existing and existing[1].ephemeralOwner == zk.session_id:
                return existing[1].czxid
            if time.monotonic() > deadline:
                raise StartupError(
                    f"broker id {registration.broker_id} is already registered at {path} by another live process"
                ) from None
            time.sleep(0.25)
