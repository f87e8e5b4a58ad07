"""`replog elect-leaders --preferred|--unclean (--all | --path-to-json-file F | --topic T --partition P)`."""

from __future__ import annotations

from replog.cli import plan_files
from replog.cli.args import positive
from replog.cli.output import emit
from replog.common.errors import error_name
from replog.v1 import admin_pb2, admin_pb2_grpc, common_pb2

TIMEOUT_MS_DEFAULT = 30_000
SETTLED = {common_pb2.ERROR_CODE_NONE, common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED}


def add_parser(sub) -> None:
    elect = sub.add_parser("elect-leaders", help="run a preferred or unclean leader election")
    kind = elect.add_mutually_exclusive_group(required=True)
    kind.add_argument("--preferred", action="store_true", help="move leadership back to the preferred replicas")
    kind.add_argument("--unclean", action="store_true",
                      help="elect any live replica for offline partitions (may lose committed data)")
    which = elect.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", "--all-topic-partitions", action="store_true", dest="all", help="every partition")
    which.add_argument("--path-to-json-file", metavar="FILE", help='{"partitions":[{"topic":"t","partition":0}]}')
    which.add_argument("--topic", help="one partition's topic (with --partition)")
    elect.add_argument("--partition", type=int)
    elect.add_argument("--timeout-ms", type=positive, default=TIMEOUT_MS_DEFAULT,
                       help="how long to wait for the controller")
    elect.set_defaults(run=run, parser=elect)


def run(args, channel) -> int:
    if args.topic is not None and args.partition is None:
        args.parser.error("--topic needs --partition")
    if args.path_to_json_file:
        partitions = plan_files.read_partitions(args.path_to_json_file)
    elif args.topic is not None:
        partitions = [(args.topic, args.partition)]
    else:
        partitions = []
    request = admin_pb2.ElectLeadersRequest(
        election_type=admin_pb2.ELECTION_TYPE_PREFERRED if args.preferred else admin_pb2.ELECTION_TYPE_UNCLEAN,
        partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in partitions],
        all=args.all, timeout_ms=args.timeout_ms,
    )
    reply = admin_pb2_grpc.AdminServiceStub(channel).ElectLeaders(request, timeout=args.timeout_ms / 1000.0 + 10)
    rows = [{"topic": p.topic, "partition": p.partition, "result": error_name(p.error_code),
             "message": p.error_message} for p in reply.partitions]
    elected = sum(1 for p in reply.partitions if p.error_code == common_pb2.ERROR_CODE_NONE)
    not_needed = sum(1 for p in reply.partitions if p.error_code == common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED)
    failed = len(rows) - elected - not_needed
    kind = "preferred" if args.preferred else "unclean"
    emit(args.output, {"election_type": kind, "partitions": rows},
         ("", ["TOPIC", "PARTITION", "RESULT", "DETAIL"],
          [[r["topic"], r["partition"], r["result"], r["message"]] for r in rows]),
         lines=[f"{kind.capitalize()} election: {elected} elected, {not_needed} not needed, {failed} failed."])
    return 1 if failed else 0
