"""Client quota requests: AlterClientQuotas, DescribeClientQuotas.

Each reads every entity's quotas (quotas/store.py; after a sync, so it sees every write committed
before the request), lets the core decide (core/quotas.py), and writes the decision in one
version-checked transaction that also sets the change marker on /config/quotas, which brokers watch
(zk/schema/client_quotas.py). A version check that fails means another writer went first: the
request reads and decides again (zk_writes.retrying).
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.common.quotas.core.model import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, QuotaRecord
from replog.common.quotas.store import read_quotas
from replog.common.topic_admin.zk_writes import Conflict, commit, create_or_set, retrying
from replog.common.zk import schema
from replog.gateway.core import quotas as core
from replog.gateway.deps import GatewayDeps
from replog.v1 import admin_pb2

_TYPES = {admin_pb2.CLIENT_QUOTA_TYPE_PRODUCER_BYTE_RATE: PRODUCER_BYTE_RATE,
          admin_pb2.CLIENT_QUOTA_TYPE_CONSUMER_BYTE_RATE: CONSUMER_BYTE_RATE}


def alter_client_quotas(deps: GatewayDeps,
                        request: admin_pb2.AlterClientQuotasRequest) -> admin_pb2.AlterClientQuotasResponse:
    checked = core.check_alterations([
        core.Alteration(a.entity.principal, a.entity.default_user,
                        tuple(core.QuotaOp(_TYPES.get(op.type), op.value, op.remove) for op in a.ops))
        for a in request.alterations])

    def attempt() -> core.QuotaChange:
        change = core.plan_alter(_read(deps), checked)
        _write(deps, change.writes)
        return change

    change = retrying(attempt, "alter client quotas")
    return admin_pb2.AlterClientQuotasResponse(entries=[_entry(e, r) for e, r in change.entries])


def describe_client_quotas(deps: GatewayDeps,
                           request: admin_pb2.DescribeClientQuotasRequest) -> admin_pb2.DescribeClientQuotasResponse:
    named = request.HasField("entity")
    entity = core.entity_of(request.entity.principal, request.entity.default_user, "entity") if named else None
    entries, effective = core.described(_read(deps), entity, named)
    response = admin_pb2.DescribeClientQuotasResponse(entries=[_entry(e, r) for e, r in entries])
    if effective is not None:
        response.effective.CopyFrom(_entry(entity, effective))
    return response


def _entry(entity: core.Entity, record: QuotaRecord) -> admin_pb2.ClientQuotaEntry:
    return admin_pb2.ClientQuotaEntry(
        entity=admin_pb2.ClientQuotaEntity(principal=entity or "", default_user=entity is None),
        producer_byte_rate=record.producer_byte_rate or 0, consumer_byte_rate=record.consumer_byte_rate or 0)


def _read(deps: GatewayDeps) -> dict[core.Entity, core.Stored]:
    deps.kazoo.sync("/")
    return {entity: core.Stored(record, version) for entity, (record, version) in read_quotas(deps.kazoo).items()}


def _write(deps: GatewayDeps, writes) -> None:
    if not writes:
        return
    # /config/quotas and its folder come with the first quota (the gateway may create children of /config);
    # every znode there gets the same ACL (schema/znode_acls.py), so ensure_path may give it to each one.
    deps.kazoo.ensure_path(schema.QUOTA_USERS, acl=deps.zk.acl(schema.QUOTA_USERS))
    tx = deps.kazoo.transaction()
    for write in writes:
        path = schema.quota_user_path(write.entity)
        if write.record.empty:
            tx.delete(path, version=write.version)
        else:
            create_or_set(tx, path, write.record.encode(), write.version, deps.zk.acl(path))
    tx.set_data(schema.QUOTAS, schema.QuotaChangeMarker(deps.clock.now_ms()).encode())
    try:
        commit(tx)
    except (BadVersionError, NodeExistsError, NoNodeError):
        raise Conflict() from None
