"""`replog groups`: list, describe, reset the offsets of, and delete consumer groups (kafka-consumer-groups).

Groups live on the brokers (each on its coordinator), not in the gateway: these commands ask the
gateway for the live brokers, then call GroupService on them, and ListOffsets on partition leaders
for log ends. Lag is the log end (the high watermark) minus the committed offset.

    replog groups list
    replog groups describe --group G
    replog groups reset-offsets --group G --topic T --to-earliest | --to-latest | --to-offset N |
        --to-datetime 2026-11-26T08:30:00Z | --shift-by -10  [--execute]

reset-offsets only plans (prints the offsets it would set) unless --execute is given, as
kafka-consumer-groups does: an operator sees the plan before anything moves.
    replog groups delete --group G
"""

from __future__ import annotations

import grpc

from replog.cli.data import brokers
from replog.cli.output import CliError, emit
from replog.cli.record_lines import LineError, parse_timestamp
from replog.v1 import common_pb2, group_pb2, group_pb2_grpc, log_pb2

E = common_pb2
TIMEOUT_S = 10


def add_parser(sub) -> None:
    groups = sub.add_parser("groups", help="consumer groups: members, committed offsets, lag")
    verbs = groups.add_subparsers(dest="verb", required=True, metavar="VERB")
    verbs.add_parser("list", help="every group").set_defaults(run=run_list)
    describe = verbs.add_parser("describe", help="members, assignment, committed offset, log end and lag")
    describe.add_argument("--group", required=True)
    describe.set_defaults(run=run_describe)
    reset = verbs.add_parser("reset-offsets", help="plan, and with --execute apply, new committed offsets for a "
                                                   "stopped group")
    reset.add_argument("--group", required=True)
    reset.add_argument("--topic", required=True)
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    to.add_argument("--to-datetime", metavar="T", help="ISO 8601 (UTC unless it says) or milliseconds since the epoch")
    to.add_argument("--shift-by", type=int, metavar="N", help="move each committed offset by N (may be negative)")
    how = reset.add_mutually_exclusive_group()
    how.add_argument("--execute", action="store_true", help="apply the new offsets (without it: only print them)")
    how.add_argument("--dry-run", action="store_true", help="print the new offsets, change nothing (the default)")
    reset.set_defaults(run=run_reset)
    delete = verbs.add_parser("delete", help="delete a group without members, with its offsets")
    delete.add_argument("--group", required=True)
    delete.set_defaults(run=run_delete)


class _Cluster:
    def __init__(self, args, channel) -> None:
        from replog.client import MetadataCache

        self.addresses = brokers(channel)
        self.metadata = MetadataCache(self.addresses, tls=args.tls, insecure=args.tls is None)

    def stub(self, address: str) -> group_pb2_grpc.GroupServiceStub:
        return group_pb2_grpc.GroupServiceStub(self.metadata.channels.get(address))

    def coordinator(self, group_id: str) -> group_pb2_grpc.GroupServiceStub:
        found = self.stub(self.addresses[0]).FindCoordinator(group_pb2.FindCoordinatorRequest(group_id=group_id),
                                                            timeout=TIMEOUT_S)
        _check(found, f"finding the coordinator of {group_id}")
        return self.stub(f"{found.coordinator.host}:{found.coordinator.port}")

    def offset(self, topic: str, partition: int, spec: int, timestamp_ms: int = 0) -> int:
        self.metadata.refresh([topic])
        leader = self.metadata.leader_address(topic, partition)
        if leader is None:
            raise CliError(f"{topic}-{partition} has no leader now; try again")
        reply = self.metadata.stub(leader[0]).ListOffsets(log_pb2.ListOffsetsRequest(partitions=[
            log_pb2.ListOffsetsPartition(topic=topic, partition=partition, spec=spec, timestamp_ms=timestamp_ms,
                                         current_leader_epoch=-1)]), timeout=TIMEOUT_S)
        _check(reply.partitions[0], f"ListOffsets of {topic}-{partition}")
        return reply.partitions[0].offset

    def close(self) -> None:
        self.metadata.close()


def _check(reply, what: str) -> None:
    if reply.error_code != E.ERROR_CODE_NONE:
        raise CliError(f"{what}: {E.ErrorCode.Name(reply.error_code).removeprefix('ERROR_CODE_')}: "
                       f"{reply.error_message}")


def _state(state: int) -> str:
    return group_pb2.GroupState.Name(state).removeprefix("GROUP_STATE_")


def run_list(args, channel) -> int:
    cluster = _Cluster(args, channel)
    try:
        rows = {}
        for address in cluster.addresses:
            try:
                reply = cluster.stub(address).ListGroups(group_pb2.ListGroupsRequest(), timeout=TIMEOUT_S)
            except grpc.RpcError as exc:
                raise CliError(f"ListGroups on {address}: {exc.code().name}: {exc.details()}") from None
            for g in reply.groups:
                rows[g.group_id] = {"group": g.group_id, "state": _state(g.state), "protocol_type": g.protocol_type,
                                    "coordinator": address}
    finally:
        cluster.close()
    listed = [rows[k] for k in sorted(rows)]
    emit(args.output, listed, ("", ["GROUP", "STATE", "PROTOCOL TYPE", "COORDINATOR"],
                               [[r["group"], r["state"], r["protocol_type"], r["coordinator"]] for r in listed]))
    return 0


def describe_group(cluster: _Cluster, group_id: str) -> dict:
    """The group's state and members, and per partition: committed offset, log end, lag and owner."""
    coordinator = cluster.coordinator(group_id)
    described = coordinator.DescribeGroups(group_pb2.DescribeGroupsRequest(group_ids=[group_id]),
                                           timeout=TIMEOUT_S).groups[0]
    _check(described, f"describing {group_id}")
    fetched = coordinator.OffsetFetch(group_pb2.OffsetFetchRequest(group_id=group_id), timeout=TIMEOUT_S)
    _check(fetched, f"fetching the offsets of {group_id}")
    owner = {(tp.topic, tp.partition): m for m in described.members for tp in m.assignment}
    committed = {(o.topic, o.partition): o.offset for o in fetched.offsets}
    partitions = []
    for topic, partition in sorted(set(owner) | set(committed)):
        end = cluster.offset(topic, partition, log_pb2.OFFSET_SPEC_LATEST)
        offset = committed.get((topic, partition))
        member = owner.get((topic, partition))
        partitions.append({"topic": topic, "partition": partition, "committed_offset": offset, "log_end_offset": end,
                           "lag": None if offset is None else max(0, end - offset),
                           "member_id": member.member_id if member else None,
                           "client_id": member.client_id if member else None})
    return {"group": group_id, "state": _state(described.state), "generation_id": described.generation_id,
            "assignor": described.protocol_name, "members": len(described.members), "partitions": partitions}


def run_describe(args, channel) -> int:
    cluster = _Cluster(args, channel)
    try:
        found = describe_group(cluster, args.group)
    finally:
        cluster.close()
    rows = [[p["topic"], p["partition"], p["committed_offset"], p["log_end_offset"], p["lag"], p["member_id"],
             p["client_id"]] for p in found["partitions"]]
    emit(args.output, found, ("", ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID",
                                   "CLIENT-ID"], rows),
         lines=[f"group {found['group']}: {found['state']}, generation {found['generation_id']}, "
                f"{found['members']} member(s), assignor {found['assignor'] or '-'}"])
    return 0


def _targets(args, cluster: _Cluster, committed: dict[int, int]) -> dict[int, int]:
    cluster.metadata.refresh([args.topic])
    count = cluster.metadata.partition_count(args.topic)
    targets = {}
    for p in range(count):
        earliest = cluster.offset(args.topic, p, log_pb2.OFFSET_SPEC_EARLIEST)
        latest = cluster.offset(args.topic, p, log_pb2.OFFSET_SPEC_LATEST)
        if args.to_earliest:
            target = earliest
        elif args.to_latest:
            target = latest
        elif args.to_offset is not None:
            target = args.to_offset
        elif args.to_datetime is not None:
            try:
                stamp = parse_timestamp(args.to_datetime)
            except LineError as exc:
                raise CliError(str(exc)) from None
            found = cluster.offset(args.topic, p, log_pb2.OFFSET_SPEC_TIMESTAMP, stamp)
            target = latest if found < 0 else found
        else:
            if p not in committed:
                continue  # nothing to shift
            target = committed[p] + args.shift_by
        targets[p] = min(max(target, earliest), latest)  # as kafka-consumer-groups clamps into the log
    return targets


def run_reset(args, channel) -> int:
    cluster = _Cluster(args, channel)
    try:
        found = describe_group(cluster, args.group) if _exists(cluster, args.group) else None
        if found is not None and found["members"] and args.execute:
            raise CliError(f"group {args.group} has {found['members']} active member(s) ({found['state']}); "
                           "stop them before resetting its offsets")
        committed = {p["partition"]: p["committed_offset"] for p in (found or {"partitions": []})["partitions"]
                     if p["topic"] == args.topic and p["committed_offset"] is not None}
        targets = _targets(args, cluster, committed)
        if args.execute and targets:
            reply = cluster.coordinator(args.group).AlterGroupOffsets(group_pb2.AlterGroupOffsetsRequest(
                group_id=args.group, partitions=[group_pb2.OffsetCommitPartition(
                    topic=args.topic, partition=p, offset=o, leader_epoch=-1) for p, o in sorted(targets.items())]),
                timeout=TIMEOUT_S)
            _check(reply, f"resetting the offsets of {args.group}")
    finally:
        cluster.close()
    rows = [{"topic": args.topic, "partition": p, "previous_offset": committed.get(p), "new_offset": o}
            for p, o in sorted(targets.items())]
    plan = "reset" if args.execute else "would reset (a plan: nothing changed; --execute applies it)"
    emit(args.output, {"group": args.group, "dry_run": not args.execute, "executed": args.execute,
                       "partitions": rows},
         ("", ["TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"],
          [[r["topic"], r["partition"], r["previous_offset"], r["new_offset"]] for r in rows]),
         lines=[f"{plan} group {args.group} on {args.topic}:"])
    return 0


def _exists(cluster: _Cluster, group_id: str) -> bool:
    described = cluster.coordinator(group_id).DescribeGroups(group_pb2.DescribeGroupsRequest(group_ids=[group_id]),
                                                             timeout=TIMEOUT_S).groups[0]
    if described.error_code == E.ERROR_CODE_GROUP_ID_NOT_FOUND:
        return False
    _check(described, f"describing {group_id}")
    return True


def run_delete(args, channel) -> int:
    cluster = _Cluster(args, channel)
    try:
        reply = cluster.coordinator(args.group).DeleteGroups(group_pb2.DeleteGroupsRequest(group_ids=[args.group]),
                                                             timeout=TIMEOUT_S)
    finally:
        cluster.close()
    _check(reply.groups[0], f"deleting {args.group}")
    emit(args.output, {"group": args.group, "deleted": True}, lines=[f"deleted group {args.group}"])
    return 0
