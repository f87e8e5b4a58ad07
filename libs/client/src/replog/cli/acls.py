"""`replog acls add|list|remove` (kafka-acls' options, in replog's words).

    replog acls add --allow-principal User:alice --operation produce --topic orders
    replog acls add --deny-principal User:* --operation all --topic secret. --resource-pattern-type prefixed
    replog acls add --allow-principal User:ops --operation cluster_admin --cluster
    replog acls list --topic orders --resource-pattern-type match
    replog acls remove --allow-principal User:alice --operation produce --topic orders
    replog acls remove --topic orders            # every ACL of the literal pattern 'orders'

`add` stores every combination of the principals, operations and resources given; `remove` with
no principal removes every ACL of the resources given. The gateway checks each binding and
refuses the whole request, naming the bad value, when one is invalid.
"""

from __future__ import annotations

import itertools

import grpc

from replog.cli.output import emit
from replog.common.channels import ADMIN_RPC_TIMEOUT_S
from replog.v1 import admin_pb2, admin_pb2_grpc

OPERATIONS = ("produce", "consume", "describe", "create", "alter", "delete", "cluster_admin", "all")
CLUSTER_NAME = "replog-cluster"
COLUMNS = ["PRINCIPAL", "PERMISSION", "OPERATION", "RESOURCE", "PATTERN", "NAME"]


def add_parser(sub) -> None:
    acls = sub.add_parser("acls", help="add, list and remove ACLs: who may produce, consume or administer what")
    verbs = acls.add_subparsers(dest="verb", required=True, metavar="VERB")

    add = verbs.add_parser("add", help="allow or deny principals operations on topics or the cluster")
    _principal_options(add)
    _operation_option(add, required=True)
    _resource_options(add, ("literal", "prefixed"), "literal")
    add.set_defaults(run=run_add, parser=add)

    listing = verbs.add_parser("list", help="ACLs, all or those of some resources or principals")
    listing.add_argument("--principal", action="append", default=[], metavar="User:NAME",
                         help="only this principal's ACLs (repeatable)")
    _resource_options(listing, ("any", "match", "literal", "prefixed"), "any")
    listing.set_defaults(run=run_list, parser=listing)

    remove = verbs.add_parser("remove", help="remove ACLs; without a principal, every ACL of the resources")
    _principal_options(remove)
    _operation_option(remove, required=False)
    _resource_options(remove, ("any", "match", "literal", "prefixed"), "literal")
    remove.set_defaults(run=run_remove, parser=remove)


def _principal_options(parser) -> None:
    parser.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME",
                        help="principal to allow (repeatable; User:* is every user)")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME",
                        help="principal to deny (repeatable; a deny wins over any allow)")


def _operation_option(parser, *, required: bool) -> None:
    parser.add_argument("--operation", action="append", choices=OPERATIONS, required=required, default=None,
                        help="operation (repeatable): produce, consume, describe, create, alter, delete on topics; "
                             "describe, create, alter, cluster_admin on the cluster; consume, describe, "
                             "delete on groups; all")


def _resource_options(parser, pattern_types: tuple[str, ...], default: str) -> None:
    parser.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                        help="topic name, prefix (with --resource-pattern-type prefixed) or * (repeatable)")
    parser.add_argument("--group", action="append", default=[], metavar="GROUP",
                        help="consumer group id, prefix (with --resource-pattern-type prefixed) or * (repeatable)")
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument("--resource-pattern-type", choices=pattern_types, default=default,
                        help=f"how --topic and --group names match (default {default})")


def _stub(channel: grpc.Channel) -> admin_pb2_grpc.AdminServiceStub:
    return admin_pb2_grpc.AdminServiceStub(channel)


def _resources(args) -> list[tuple[int, str]]:
    topics = [(admin_pb2.ACL_RESOURCE_TYPE_TOPIC, name) for name in args.topic]
    topics += [(admin_pb2.ACL_RESOURCE_TYPE_GROUP, name) for name in args.group]
    return topics + ([(admin_pb2.ACL_RESOURCE_TYPE_CLUSTER, CLUSTER_NAME)] if args.cluster else [])


def _pattern(args, resource_type: int) -> int:
    if resource_type == admin_pb2.ACL_RESOURCE_TYPE_CLUSTER and args.resource_pattern_type != "any":
        return admin_pb2.ACL_PATTERN_TYPE_LITERAL  # the cluster is one literal name
    if args.resource_pattern_type == "any":
        return admin_pb2.ACL_PATTERN_TYPE_UNSPECIFIED
    return admin_pb2.AclPatternType.Value("ACL_PATTERN_TYPE_" + args.resource_pattern_type.upper())


def _principals(args) -> list[tuple[str, int]]:
    return ([(p, admin_pb2.ACL_PERMISSION_ALLOW) for p in args.allow_principal]
            + [(p, admin_pb2.ACL_PERMISSION_DENY) for p in args.deny_principal])


def _operation(word: str) -> int:
    return admin_pb2.AclOperation.Value("ACL_OPERATION_" + word.upper())


def binding_dict(binding: admin_pb2.AclBinding) -> dict:
    def word(enum, prefix: str, number: int) -> str:
        return enum.Name(number).removeprefix(prefix).lower()

    return {
        "principal": binding.principal,
        "permission": word(admin_pb2.AclPermission, "ACL_PERMISSION_", binding.permission),
        "operation": word(admin_pb2.AclOperation, "ACL_OPERATION_", binding.operation),
        "resource_type": word(admin_pb2.AclResourceType, "ACL_RESOURCE_TYPE_", binding.resource_type),
        "pattern_type": word(admin_pb2.AclPatternType, "ACL_PATTERN_TYPE_", binding.pattern_type),
        "resource_name": binding.resource_name,
    }


def _table(bindings: list[dict]):
    """The table of `bindings`, or None when there are none (the heading line says so)."""
    if not bindings:
        return None
    return "", COLUMNS, [[b["principal"], b["permission"], b["operation"], b["resource_type"], b["pattern_type"],
                          b["resource_name"]] for b in bindings]


def run_add(args, channel) -> int:
    principals, resources = _principals(args), _resources(args)
    if not principals:
        args.parser.error("give --allow-principal or --deny-principal")
    if not resources:
        args.parser.error("give --topic, --group or --cluster")
    bindings = [admin_pb2.AclBinding(principal=principal, permission=permission, operation=_operation(operation),
                                     resource_type=resource_type, pattern_type=_pattern(args, resource_type),
                                     resource_name=name)
                for (principal, permission), operation, (resource_type, name)
                in itertools.product(principals, args.operation, resources)]
    reply = _stub(channel).CreateAcls(admin_pb2.CreateAclsRequest(bindings=bindings), timeout=ADMIN_RPC_TIMEOUT_S)
    created = [binding_dict(b) for b in reply.created]
    present = [binding_dict(b) for b in reply.already_present]
    emit(args.output, {"created": created, "already_present": present},
         _table(created),
         lines=[f"Added {len(created)} ACL(s)" + (f"; {len(present)} were there already" if present else "")
                + (":" if created else ".")])
    return 0


def run_list(args, channel) -> int:
    resources = _resources(args) or [(admin_pb2.ACL_RESOURCE_TYPE_UNSPECIFIED, "")]
    filters = [admin_pb2.AclBindingFilter(principal=principal, resource_type=resource_type, resource_name=name,
                                          pattern_type=_pattern(args, resource_type) if name else 0)
               for principal, (resource_type, name) in itertools.product(args.principal or [""], resources)]
    found: dict[tuple, dict] = {}
    for acl_filter in filters:
        reply = _stub(channel).DescribeAcls(admin_pb2.DescribeAclsRequest(filter=acl_filter),
                                            timeout=ADMIN_RPC_TIMEOUT_S)
        for binding in reply.bindings:
            row = binding_dict(binding)
            found[tuple(row.values())] = row
    listed = [found[key] for key in sorted(found)]
    emit(args.output, {"acls": listed}, _table(listed),
         lines=[f"{len(listed)} ACL(s):" if listed else "No ACLs match."])
    return 0


def run_remove(args, channel) -> int:
    resources = _resources(args)
    if not resources:
        args.parser.error("give --topic, --group or --cluster (the ACLs of which resource to remove)")
    principals = _principals(args) or [("", admin_pb2.ACL_PERMISSION_UNSPECIFIED)]
    operations = [_operation(o) for o in args.operation or []] or [admin_pb2.ACL_OPERATION_UNSPECIFIED]
    filters = [admin_pb2.AclBindingFilter(principal=principal, permission=permission, operation=operation,
                                          resource_type=resource_type, pattern_type=_pattern(args, resource_type),
                                          resource_name=name)
               for (principal, permission), operation, (resource_type, name)
               in itertools.product(principals, operations, resources)]
    reply = _stub(channel).DeleteAcls(admin_pb2.DeleteAclsRequest(filters=filters), timeout=ADMIN_RPC_TIMEOUT_S)
    deleted = [binding_dict(b) for b in reply.deleted]
    emit(args.output, {"deleted": deleted}, _table(deleted),
         lines=[f"Removed {len(deleted)} ACL(s):" if deleted else "No ACLs matched; nothing was removed."])
    return 0
