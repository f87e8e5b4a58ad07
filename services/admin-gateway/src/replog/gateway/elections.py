"""ElectLeaders: answer what the snapshot can, ask the controller for the rest, wait.

Protocol (the controller side matches it): the gateway creates
/admin/preferred_replica_election or /admin/unclean_leader_election holding the
eligible partitions; the controller elects and deletes the znode. The gateway
waits for the deletion (a ZooKeeper watch, up to timeout_ms), then reads the
partition states to say which partitions are now led as asked. One election of
each type at a time: an existing znode refuses the request.
"""

from __future__ import annotations

import threading
import time

from kazoo.exceptions import NodeExistsError

from replog.common.topic_admin.core.refusal import invalid, precondition
from replog.common.topic_admin.zk_view import load_view
from replog.common.zk import schema
from replog.gateway import convert
from replog.gateway.core import elections as core
from replog.gateway.deps import GatewayDeps
from replog.v1 import admin_pb2, common_pb2

TIMEOUT_MS_DEFAULT = 30_000
TIMEOUT_MS_MAX = 300_000

_TYPES = {
    admin_pb2.ELECTION_TYPE_PREFERRED: (core.ElectionType.PREFERRED, schema.PREFERRED_REPLICA_ELECTION),
    admin_pb2.ELECTION_TYPE_UNCLEAN: (core.ElectionType.UNCLEAN, schema.UNCLEAN_LEADER_ELECTION),
}


def elect_leaders(deps: GatewayDeps, request: admin_pb2.ElectLeadersRequest) -> admin_pb2.ElectLeadersResponse:
    if request.election_type not in _TYPES:
        raise invalid(f"Election type {request.election_type} is not PREFERRED (1) or UNCLEAN (2).")
    if not 0 <= request.timeout_ms <= TIMEOUT_MS_MAX:
        raise invalid(f"timeout_ms must be between 0 (default {TIMEOUT_MS_DEFAULT}) and {TIMEOUT_MS_MAX}, "
                      f"got {request.timeout_ms}.")
    election_type, path = _TYPES[request.election_type]
    timeout_ms = request.timeout_ms or TIMEOUT_MS_DEFAULT
    named = convert.topic_partitions(request.partitions)
    view = load_view(deps.connect, topics=None if request.all else {t for t, _ in named}, states=True)
    partitions = core.chosen_partitions(view, named, request.all)
    if deps.kazoo.exists(path):
        raise precondition(f"An election is already in progress ({path} exists); try again when it completes.")
    checked = core.precheck(view, election_type, partitions)
    outcomes = dict(checked.decided)
    if checked.eligible:
        try:
            deps.kazoo.create(path, schema.ElectionRequest(checked.eligible).encode(), acl=deps.zk.acl(path))
        except NodeExistsError:
            raise precondition(f"An election is already in progress ({path} exists); try again when it completes.") from None
        completed = _wait_deleted(deps, path, timeout_ms / 1000.0)
        after = load_view(deps.connect, topics={t for t, _ in checked.eligible}, states=True)
        outcomes.update(core.outcomes_after(after, election_type, checked.eligible, completed, timeout_ms))
    return admin_pb2.ElectLeadersResponse(partitions=[
        common_pb2.PartitionError(topic=o.topic, partition=o.partition, error_code=int(o.code),
                                  error_message=o.message)
        for o in (outcomes[tp] for tp in partitions)
    ])


def _wait_deleted(deps: GatewayDeps, path: str, timeout_s: float) -> bool:
    """True once `path` is gone; False after `timeout_s`. Woken by a watch, not by polling."""
    changed = threading.Event()
    deadline = time.monotonic() + timeout_s
    while True:
        changed.clear()
        if deps.kazoo.exists(path, watch=lambda event: changed.set()) is None:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        changed.wait(remaining)
