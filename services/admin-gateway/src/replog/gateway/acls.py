"""ACL requests: CreateAcls, DescribeAcls, DeleteAcls.

Each reads every resource pattern's bindings (acls/store.py; after a sync, so it sees every
write committed before the request), lets the core decide (core/acls.py), and writes the
decision in one version-checked transaction that also sets the change marker on /acls, which
brokers and gateways watch (zk/schema/acls.py). A version check that fails means another
writer went first: the request reads and decides again (zk_writes.retrying).
"""

from __future__ import annotations

from typing import Sequence

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.common.acls.store import read_acls
from replog.common.topic_admin.zk_writes import Conflict, commit, create_or_set, retrying
from replog.common.zk import schema
from replog.gateway import convert
from replog.gateway.core import acls as core
from replog.gateway.deps import GatewayDeps
from replog.v1 import admin_pb2


def create_acls(deps: GatewayDeps, request: admin_pb2.CreateAclsRequest) -> admin_pb2.CreateAclsResponse:
    bindings = [convert.acl_binding(b) for b in request.bindings]
    core.check_bindings(bindings)

    def attempt() -> core.AclCreation:
        creation = core.plan_create(_read(deps), bindings)
        _write(deps, creation.writes)
        return creation

    creation = retrying(attempt, "create ACLs")
    return admin_pb2.CreateAclsResponse(created=[convert.acl_binding_message(b) for b in creation.created],
                                        already_present=[convert.acl_binding_message(b)
                                                         for b in creation.already_present])


def describe_acls(deps: GatewayDeps, request: admin_pb2.DescribeAclsRequest) -> admin_pb2.DescribeAclsResponse:
    acl_filter = convert.acl_filter(request.filter)
    core.check_filters([acl_filter], at_least_one=False)
    found = core.describe(_read(deps), acl_filter)
    return admin_pb2.DescribeAclsResponse(bindings=[convert.acl_binding_message(b) for b in found])


def delete_acls(deps: GatewayDeps, request: admin_pb2.DeleteAclsRequest) -> admin_pb2.DeleteAclsResponse:
    filters = [convert.acl_filter(f) for f in request.filters]
    core.check_filters(filters, at_least_one=True)

    def attempt() -> core.AclDeletion:
        deletion = core.plan_delete(_read(deps), filters)
        _write(deps, deletion.writes)
        return deletion

    deletion = retrying(attempt, "delete ACLs")
    return admin_pb2.DeleteAclsResponse(deleted=[convert.acl_binding_message(b) for b in deletion.deleted])


def _read(deps: GatewayDeps) -> dict[core.Resource, core.Stored]:
    deps.kazoo.sync("/")
    return {resource: core.Stored(bindings, version) for resource, (bindings, version) in read_acls(deps.kazoo).items()}


def _write(deps: GatewayDeps, writes: Sequence[core.AclWrite]) -> None:
    if not writes:
        return
    # /acls is laid out at start-up (schema.PERSISTENT_PATHS); the folders below it are created as needed,
    # outside the transaction. Every znode under /acls gets the same ACL (schema/znode_acls.py), so
    # ensure_path may give it to each one it creates.
    for resource_type, pattern_type in sorted({w.resource[:2] for w in writes if w.version == core.NO_ZNODE}):
        folder = schema.acl_pattern_folder(resource_type, pattern_type)
        deps.kazoo.ensure_path(folder, acl=deps.zk.acl(folder))
    tx = deps.kazoo.transaction()
    for write in writes:
        path = schema.acl_resource_path(*write.resource)
        if write.bindings:
            entries = tuple(schema.AclEntry(b.principal, b.operation, b.permission) for b in write.bindings)
            create_or_set(tx, path, schema.AclResourceRecord(entries).encode(), write.version, deps.zk.acl(path))
        else:
            tx.delete(path, version=write.version)
    tx.set_data(schema.ACLS, schema.AclChangeMarker(deps.clock.now_ms()).encode())
    try:
        commit(tx)
    except (BadVersionError, NodeExistsError, NoNodeError):
        raise Conflict() from None
