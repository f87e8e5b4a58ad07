"""`replog reassign generate|execute|verify|cancel|list` (kafka-reassign-partitions, with a live --watch)."""

from __future__ import annotations

import json
import time

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from replog.cli import plan_files
from replog.cli.args import broker_list, non_negative, positive
from replog.cli.output import CliError, emit, id_list, tp_label
from replog.common.channels import ADMIN_RPC_TIMEOUT_S
from replog.v1 import admin_pb2, admin_pb2_grpc, common_pb2

STATUS = {
    admin_pb2.REASSIGNMENT_STATUS_IN_PROGRESS: "in progress",
    admin_pb2.REASSIGNMENT_STATUS_COMPLETE: "complete",
    admin_pb2.REASSIGNMENT_STATUS_FAILED: "failed",
    admin_pb2.REASSIGNMENT_STATUS_UNSPECIFIED: "unknown",
}


def add_parser(sub) -> None:
    reassign = sub.add_parser("reassign", help="move partition replicas between brokers (Kafka's reassignment JSON)")
    verbs = reassign.add_subparsers(dest="verb", required=True, metavar="VERB")

    generate = verbs.add_parser("generate", help="propose a plan moving topics onto a broker list")
    which = generate.add_mutually_exclusive_group(required=True)
    which.add_argument("--topics", type=lambda s: [t for t in s.split(",") if t], metavar="T1,T2",
                       help="topics to move")
    which.add_argument("--topics-to-move-json-file", metavar="FILE", help='{"version":1,"topics":[{"topic":"t"}]}')
    generate.add_argument("--broker-list", type=broker_list, required=True, metavar="1,2,3", help="target brokers")
    generate.add_argument("--proposed-out", metavar="FILE", help="also write the proposed plan to FILE")
    generate.set_defaults(run=run_generate)

    execute = verbs.add_parser("execute", help="start a plan; prints the current assignment for rollback first")
    execute.add_argument("--reassignment-json-file", required=True, metavar="FILE")
    execute.add_argument("--throttle", type=non_negative, default=0, metavar="BYTES_PER_S",
                         help="limit reassignment replication traffic (0: no limit)")
    execute.add_argument("--rollback-out", metavar="FILE", help="also write the rollback plan to FILE")
    _watch_flags(execute)
    execute.set_defaults(run=run_execute)

    verify = verbs.add_parser(
        "verify", help="is the plan complete? progress per partition; lifts the throttle once nothing moves")
    verify.add_argument("--reassignment-json-file", required=True, metavar="FILE")
    _watch_flags(verify)
    verify.set_defaults(run=run_verify)

    cancel = verbs.add_parser("cancel", help="cancel reassignments in progress (back to the original replicas)")
    which = cancel.add_mutually_exclusive_group(required=True)
    which.add_argument("--reassignment-json-file", metavar="FILE", help="cancel the partitions of this plan")
    which.add_argument("--all", action="store_true", help="cancel every reassignment in progress")
    which.add_argument("--topic", help="cancel one partition (with --partition)")
    cancel.add_argument("--partition", type=int)
    cancel.set_defaults(run=run_cancel, parser=cancel)

    listing = verbs.add_parser("list", help="reassignments in progress, with progress and the throttle")
    listing.set_defaults(run=run_list)


def _watch_flags(parser) -> None:
    parser.add_argument("--watch", action="store_true", help="show a live progress bar until the plan completes")
    parser.add_argument("--watch-interval-ms", type=positive, default=1000, help="how often to poll while watching")


def _stub(channel: grpc.Channel) -> admin_pb2_grpc.AdminServiceStub:
    return admin_pb2_grpc.AdminServiceStub(channel)


def _plan_proto(entries) -> list[admin_pb2.ReplicaAssignment]:
    return [admin_pb2.ReplicaAssignment(topic=t, partition=p, replicas=r) for t, p, r in entries]


def _entries(assignments) -> list[tuple[str, int, list[int]]]:
    return [(a.topic, a.partition, list(a.replicas)) for a in assignments]


def run_generate(args, channel) -> int:
    topics = args.topics if args.topics is not None else plan_files.read_topics(args.topics_to_move_json_file)
    reply = _stub(channel).GenerateReassignment(
        admin_pb2.GenerateReassignmentRequest(topics=topics, broker_ids=args.broker_list), timeout=ADMIN_RPC_TIMEOUT_S)
    current = plan_files.reassignment_json(_entries(reply.current))
    proposed = plan_files.reassignment_json(_entries(reply.proposed))
    if args.proposed_out:
        plan_files.write_json(args.proposed_out, proposed)
    emit(args.output, {"current": current, "proposed": proposed}, lines=[
        "Current partition replica assignment", json.dumps(current), "",
        "Proposed partition reassignment configuration", json.dumps(proposed),
    ])
    return 0


def _current_assignment(stub, entries) -> dict:
    """The assignment of the plan's partitions now (original replicas while a reassignment runs)."""
    topics = sorted({t for t, _, _ in entries})
    reply = stub.DescribeTopics(admin_pb2.DescribeTopicsRequest(names=topics), timeout=ADMIN_RPC_TIMEOUT_S)
    wanted = {(t, p) for t, p, _ in entries}
    current = [(p.topic, p.partition, [r for r in p.replicas if r not in set(p.adding_replicas)])
               for t in reply.topics for p in t.partitions if (p.topic, p.partition) in wanted]
    return plan_files.reassignment_json(current)


def run_execute(args, channel) -> int:
    entries = plan_files.read_reassignment(args.reassignment_json_file)
    stub = _stub(channel)
    rollback = _current_assignment(stub, entries)
    if args.rollback_out:
        plan_files.write_json(args.rollback_out, rollback)
    json_output = args.output == "json"
    if not json_output:
        # Printed before anything changes, so it is on screen even if the execute fails.
        print("Current partition replica assignment\n")
        print(json.dumps(rollback))
        print("\nSave this to use as the --reassignment-json-file option during rollback")
    stub.ExecuteReassignment(
        admin_pb2.ExecuteReassignmentRequest(partitions=_plan_proto(entries), throttle_bytes_per_s=args.throttle),
        timeout=ADMIN_RPC_TIMEOUT_S)
    started = [tp_label(t, p) for t, p, _ in entries]
    status = 0
    data = {"rollback": rollback, "started": started, "throttle_bytes_per_s": args.throttle}
    if not json_output:
        print(f"Successfully started partition reassignment{'s' if len(started) > 1 else ''} for {','.join(started)}")
        if args.throttle:
            print(f"The reassignment traffic is throttled to {args.throttle} bytes/s.")
    if args.watch:
        status, final = _watch(stub, entries, args.watch_interval_ms)
        data["status"] = final
    if json_output:
        emit("json", data)
    return status


def _progress_rows(reply) -> list[dict]:
    return [{
        "topic": p.topic, "partition": p.partition, "target_replicas": list(p.target_replicas),
        "adding_replicas": list(p.adding_replicas), "removing_replicas": list(p.removing_replicas),
        "bytes_behind": p.bytes_behind, "status": STATUS[p.status],
    } for p in reply.partitions]


def _progress_table(rows: list[dict]):
    return ("", ["TOPIC", "PARTITION", "TARGET", "ADDING", "REMOVING", "BYTES BEHIND", "STATUS"], [
        [r["topic"], r["partition"], id_list(r["target_replicas"]), id_list(r["adding_replicas"]),
         id_list(r["removing_replicas"]), r["bytes_behind"] if r["bytes_behind"] >= 0 else "unknown", r["status"]]
        for r in rows
    ])


def run_verify(args, channel) -> int:
    entries = plan_files.read_reassignment(args.reassignment_json_file)
    stub = _stub(channel)
    if args.watch:
        status, final = _watch(stub, entries, args.watch_interval_ms)
        emit(args.output, final, lines=[] if args.output == "json" else [_summary(final)])
        return status
    reply = stub.VerifyReassignment(admin_pb2.VerifyReassignmentRequest(partitions=_plan_proto(entries)),
                                    timeout=ADMIN_RPC_TIMEOUT_S)
    rows = _progress_rows(reply)
    data = {"complete": reply.complete, "partitions": rows, "throttle_removed": reply.throttle_removed}
    lines = [_summary(data)] + (["The reassignment throttle was removed."] if reply.throttle_removed else [])
    emit(args.output, data, _progress_table(rows), lines=lines)
    return 1 if any(r["status"] == "failed" for r in rows) else 0


def _summary(data: dict) -> str:
    rows = data["partitions"]
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in ("complete", "in progress", "failed")}
    state = "complete" if data["complete"] else "not complete"
    return (f"Reassignment {state}: {counts['complete']} of {len(rows)} partition(s) done, "
            f"{counts['in progress']} in progress, {counts['failed']} failed.")


def _watch(stub, entries, interval_ms: int) -> tuple[int, dict]:
    """Poll VerifyReassignment with a progress bar on stderr until nothing is in progress."""
    request = admin_pb2.VerifyReassignmentRequest(partitions=_plan_proto(entries))
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("reassigning", total=len(entries))
        while True:
            reply = stub.VerifyReassignment(request, timeout=ADMIN_RPC_TIMEOUT_S)
            rows = _progress_rows(reply)
            done = sum(1 for r in rows if r["status"] == "complete")
            behind = [r["bytes_behind"] for r in rows if r["status"] == "in progress" and r["bytes_behind"] >= 0]
            lag = f", {sum(behind)} bytes behind" if behind else ""
            bar.update(task, completed=done, description=f"reassigning{lag}")
            data = {"complete": reply.complete, "partitions": rows}
            if not any(r["status"] == "in progress" for r in rows):
                break
            time.sleep(interval_ms / 1000.0)
    failed = [tp_label(r["topic"], r["partition"]) for r in rows if r["status"] == "failed"]
    if failed:
        raise CliError(f"reassignment of {', '.join(failed)} did not reach its target (cancelled or overridden)")
    return 0, data


def run_cancel(args, channel) -> int:
    if args.topic is not None and args.partition is None:
        args.parser.error("--topic needs --partition")
    if args.reassignment_json_file:
        partitions = [(t, p) for t, p, _ in plan_files.read_reassignment(args.reassignment_json_file)]
    elif args.topic is not None:
        partitions = [(args.topic, args.partition)]
    else:
        partitions = []
    reply = _stub(channel).CancelReassignment(admin_pb2.CancelReassignmentRequest(
        partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in partitions]),
        timeout=ADMIN_RPC_TIMEOUT_S)
    cancelled = [tp_label(tp.topic, tp.partition) for tp in reply.cancelled]
    emit(args.output, {"cancelled": cancelled},
         lines=[f"Cancelled the reassignment of {', '.join(cancelled)}; the controller restores their original replicas."])
    return 0


def run_list(args, channel) -> int:
    reply = _stub(channel).ListReassignments(admin_pb2.ListReassignmentsRequest(), timeout=ADMIN_RPC_TIMEOUT_S)
    rows = _progress_rows(reply)
    throttle = f"{reply.throttle_bytes_per_s} bytes/s" if reply.throttle_bytes_per_s else "none"
    emit(args.output, {"partitions": rows, "throttle_bytes_per_s": reply.throttle_bytes_per_s},
         _progress_table(rows) if rows else None,
         lines=[f"{len(rows)} partition(s) being reassigned; throttle: {throttle}"])
    return 0
