"""`replog topics create|delete|list|describe|alter|add-partitions` (kafka-topics' verbs)."""

from __future__ import annotations

import grpc

from replog.cli.args import config_pair, replica_assignment
from replog.cli.output import emit, id_list
from replog.common.channels import ADMIN_RPC_TIMEOUT_S
from replog.v1 import admin_pb2, admin_pb2_grpc

FILTERS = {
    "under_replicated_partitions": admin_pb2.PARTITION_FILTER_UNDER_REPLICATED,
    "unavailable_partitions": admin_pb2.PARTITION_FILTER_UNAVAILABLE,
    "under_min_isr_partitions": admin_pb2.PARTITION_FILTER_UNDER_MIN_ISR,
    "at_min_isr_partitions": admin_pb2.PARTITION_FILTER_AT_MIN_ISR,
}


def add_parser(sub) -> None:
    topics = sub.add_parser("topics", help="create, delete, list, describe and change topics")
    verbs = topics.add_subparsers(dest="verb", required=True, metavar="VERB")

    create = verbs.add_parser("create", help="create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, help="number of partitions")
    create.add_argument("--replication-factor", type=int, help="replicas per partition")
    create.add_argument("--replica-assignment", type=replica_assignment, metavar="1:2,2:3,...",
                        help="explicit placement, partitions separated by ',', replicas by ':' (preferred first)")
    create.add_argument("--config", type=config_pair, action="append", default=[], metavar="KEY=VALUE",
                        help="topic config override (repeatable)")
    create.add_argument("--validate-only", action="store_true", help="show the assignment, create nothing")
    create.add_argument("--start-index", type=int, help="fix the placement's start index (random by default)")
    create.add_argument("--replica-shift", type=int, help="fix the placement's replica shift (random by default)")
    create.set_defaults(run=run_create, parser=create)

    delete = verbs.add_parser("delete", help="mark a topic for deletion (the controller completes it)")
    delete.add_argument("topic")
    delete.set_defaults(run=run_delete)

    listing = verbs.add_parser("list", help="topic names")
    listing.add_argument("--include-deleting", action="store_true", help="also topics marked for deletion")
    listing.add_argument("--include-internal", action="store_true", help="also internal topics (__consumer_offsets)")
    listing.set_defaults(run=run_list)

    describe = verbs.add_parser("describe", help="partitions: leader, replicas, ISR, health, log start, HW, size; "
                                                 "and configs")
    describe.add_argument("topics", nargs="*", metavar="TOPIC", help="topics to describe (default: all)")
    health = describe.add_mutually_exclusive_group()
    health.add_argument("--under-replicated-partitions", action="store_true",
                        help="only partitions whose ISR is smaller than the replication factor")
    health.add_argument("--unavailable-partitions", action="store_true",
                        help="only partitions without a live leader")
    health.add_argument("--under-min-isr-partitions", action="store_true",
                        help="only partitions whose ISR is smaller than min.insync.replicas")
    health.add_argument("--at-min-isr-partitions", action="store_true",
                        help="only partitions whose ISR size equals min.insync.replicas")
    health.add_argument("--configs", action="store_true",
                        help="each config's value and source (topic override or broker default), as kafka-configs "
                             "--describe --all shows them, instead of the partitions")
    describe.set_defaults(run=run_describe)

    alter = verbs.add_parser("alter", help="set or remove topic configs")
    alter.add_argument("topic")
    alter.add_argument("--config", type=config_pair, action="append", default=[], metavar="KEY=VALUE",
                       help="config to set (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                       help="config to remove, back to the default (repeatable)")
    alter.set_defaults(run=run_alter, parser=alter)

    grow = verbs.add_parser("add-partitions", help="grow a topic to more partitions")
    grow.add_argument("topic")
    grow.add_argument("--partitions", type=int, required=True, help="the new total partition count")
    grow.add_argument("--replica-assignment", type=replica_assignment, metavar="1:2,2:3,...",
                      help="placement of the new partitions (or of all, as kafka-topics takes it)")
    grow.add_argument("--validate-only", action="store_true", help="show the assignment, change nothing")
    grow.set_defaults(run=run_add_partitions)


def _stub(channel: grpc.Channel) -> admin_pb2_grpc.AdminServiceStub:
    return admin_pb2_grpc.AdminServiceStub(channel)


def _assignment_rows(assignment) -> list[dict]:
    return [{"partition": a.partition, "replicas": list(a.replicas)} for a in assignment]


def run_create(args, channel) -> int:
    if args.replica_assignment is None and (args.partitions is None or args.replication_factor is None):
        args.parser.error("give --partitions and --replication-factor, or --replica-assignment")
    if args.replica_assignment is not None and (args.partitions is not None or args.replication_factor is not None):
        args.parser.error("--replica-assignment replaces --partitions and --replication-factor; give one or the other")
    request = admin_pb2.CreateTopicRequest(
        name=args.topic, partitions=args.partitions or 0, replication_factor=args.replication_factor or 0,
        configs=dict(args.config), validate_only=args.validate_only,
        assignment=[admin_pb2.ReplicaAssignment(partition=p, replicas=r)
                    for p, r in enumerate(args.replica_assignment or [])],
    )
    if args.start_index is not None:
        request.start_index = args.start_index
    if args.replica_shift is not None:
        request.replica_shift = args.replica_shift
    reply = _stub(channel).CreateTopic(request, timeout=ADMIN_RPC_TIMEOUT_S)
    rows = _assignment_rows(reply.assignment)
    data = {"topic": args.topic, "created": not args.validate_only, "assignment": rows, "configs": dict(reply.configs)}
    verb = "Validated (nothing created)" if args.validate_only else "Created"
    emit(args.output, data, ("", ["PARTITION", "REPLICAS"], [[r["partition"], id_list(r["replicas"])] for r in rows]),
         lines=[f"{verb} topic '{args.topic}' with {len(rows)} partition(s):"])
    return 0


def run_delete(args, channel) -> int:
    _stub(channel).DeleteTopic(admin_pb2.DeleteTopicRequest(name=args.topic), timeout=ADMIN_RPC_TIMEOUT_S)
    emit(args.output, {"topic": args.topic, "marked_for_deletion": True},
         lines=[f"Topic '{args.topic}' is marked for deletion; the controller completes it."])
    return 0


def run_list(args, channel) -> int:
    reply = _stub(channel).ListTopics(admin_pb2.ListTopicsRequest(include_deleting=args.include_deleting,
                                                                    include_internal=args.include_internal),
                                      timeout=ADMIN_RPC_TIMEOUT_S)
    emit(args.output, {"topics": list(reply.topics)}, lines=list(reply.topics))
    return 0


def partition_status(p) -> str:
    flags = [name for name, on in (("unavailable", p.unavailable), ("under-replicated", p.under_replicated),
                                   ("under-min-isr", p.under_min_isr), ("at-min-isr", p.at_min_isr),
                                   ("unclean-leader", p.unclean_leader)) if on]
    return ",".join(flags) or "ok"


def partition_dict(p) -> dict:
    return {
        "topic": p.topic, "partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
        "replicas": list(p.replicas), "isr": list(p.isr), "elr": list(p.elr),
        "adding_replicas": list(p.adding_replicas),
        "removing_replicas": list(p.removing_replicas), "offline_replicas": list(p.offline_replicas),
        "unavailable": p.unavailable, "under_replicated": p.under_replicated,
        "under_min_isr": p.under_min_isr, "at_min_isr": p.at_min_isr, "unclean_leader": p.unclean_leader,
        "log_start_offset": p.log_start_offset, "high_watermark": p.high_watermark, "size_bytes": p.size_bytes,
    }


CONFIG_SOURCES = {admin_pb2.CONFIG_SOURCE_TOPIC_OVERRIDE: "topic override",
                  admin_pb2.CONFIG_SOURCE_BROKER_DEFAULT: "broker default",
                  admin_pb2.CONFIG_SOURCE_DEFAULT: "default"}


def config_entry_dicts(t) -> list[dict]:
    return [{"name": e.name, "value": e.value, "source": CONFIG_SOURCES.get(e.source, "unknown")}
            for e in t.config_entries]


def run_describe(args, channel) -> int:
    if args.configs:
        return _describe_configs(args, channel)
    chosen = [flag for flag in FILTERS if getattr(args, flag)]
    request = admin_pb2.DescribeTopicsRequest(
        names=args.topics, filter=FILTERS[chosen[0]] if chosen else admin_pb2.PARTITION_FILTER_UNSPECIFIED
    )
    reply = _stub(channel).DescribeTopics(request, timeout=ADMIN_RPC_TIMEOUT_S)
    data = {"topics": [
        {"name": t.name, "configs": dict(t.configs), "config_entries": config_entry_dicts(t), "deleting": t.deleting,
         "partitions": [partition_dict(p) for p in t.partitions]}
        for t in reply.topics
    ]}
    lines, rows = [], []
    for t in reply.topics:
        if not chosen:
            replication = len(t.partitions[0].replicas) - len(t.partitions[0].adding_replicas) if t.partitions else 0
            configs = ",".join(f"{k}={v}" for k, v in sorted(t.configs.items()))
            lines.append(f"Topic: {t.name}  PartitionCount: {len(t.partitions)}  ReplicationFactor: {replication}"
                         f"{'  MarkedForDeletion: true' if t.deleting else ''}  Configs: {configs}")
        for p in t.partitions:
            rows.append([p.topic, p.partition, p.leader if p.leader >= 0 else "none", p.leader_epoch,
                         id_list(p.replicas), id_list(p.isr), id_list(p.elr), id_list(p.offline_replicas),
                         id_list(p.adding_replicas), id_list(p.removing_replicas), partition_status(p),
                         *(value if value >= 0 else "?" for value in (p.log_start_offset, p.high_watermark,
                                                                      p.size_bytes))])
    columns = ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "ELR", "OFFLINE", "ADDING", "REMOVING",
               "STATUS", "LOG-START", "HW", "SIZE"]
    emit(args.output, data, ("", columns, rows) if rows else None, lines=lines)
    return 0


def _describe_configs(args, channel) -> int:
    reply = _stub(channel).DescribeTopics(admin_pb2.DescribeTopicsRequest(names=args.topics),
                                          timeout=ADMIN_RPC_TIMEOUT_S)
    data = {"topics": [{"name": t.name, "config_entries": config_entry_dicts(t)} for t in reply.topics]}
    rows = [[t["name"], e["name"], e["value"], e["source"]] for t in data["topics"] for e in t["config_entries"]]
    emit(args.output, data, ("", ["TOPIC", "CONFIG", "VALUE", "SOURCE"], rows) if rows else None)
    return 0


def run_alter(args, channel) -> int:
    if not args.config and not args.delete_config:
        args.parser.error("give --config KEY=VALUE and/or --delete-config KEY")
    request = admin_pb2.AlterTopicConfigsRequest(topic=args.topic, set=dict(args.config), delete=args.delete_config)
    reply = _stub(channel).AlterTopicConfigs(request, timeout=ADMIN_RPC_TIMEOUT_S)
    configs = dict(reply.configs)
    emit(args.output, {"topic": args.topic, "configs": configs},
         ("", ["CONFIG", "VALUE"], sorted(configs.items())),
         lines=[f"Updated configs of topic '{args.topic}'; effective configs:"])
    return 0


def run_add_partitions(args, channel) -> int:
    stub = _stub(channel)
    entries = args.replica_assignment or []
    if entries and len(entries) == args.partitions:
        # kafka-topics takes the whole assignment and uses the new partitions' part of it.
        current = stub.DescribeTopics(admin_pb2.DescribeTopicsRequest(names=[args.topic]), timeout=ADMIN_RPC_TIMEOUT_S)
        entries = entries[len(current.topics[0].partitions):]
    first_new = args.partitions - len(entries)
    request = admin_pb2.CreatePartitionsRequest(
        topic=args.topic, total_count=args.partitions, validate_only=args.validate_only,
        assignment=[admin_pb2.ReplicaAssignment(topic=args.topic, partition=first_new + i, replicas=r)
                    for i, r in enumerate(entries)],
    )
    reply = stub.CreatePartitions(request, timeout=ADMIN_RPC_TIMEOUT_S)
    rows = _assignment_rows(reply.assignment)
    verb = "Would add" if args.validate_only else "Added"
    emit(args.output, {"topic": args.topic, "added": rows, "validate_only": args.validate_only},
         ("", ["PARTITION", "REPLICAS"], [[r["partition"], id_list(r["replicas"])] for r in rows]),
         lines=[f"{verb} {len(rows)} partition(s) to topic '{args.topic}' (now {args.partitions}):"])
    return 0
