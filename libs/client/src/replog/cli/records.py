"""`replog delete-records --offset-json-file F` (kafka-delete-records): move partitions' log start offsets up.

The file is Kafka's: {"partitions":[{"topic":"t","partition":0,"offset":42}],"version":1}; offset -1
deletes up to the high watermark. Records below each offset become unreadable at once on the leader
and, through their fetches, on the followers; the answer is each partition's new log start (Kafka's
low watermark). Exit 1 when any partition failed.
"""

from __future__ import annotations

from replog.cli import plan_files
from replog.cli.output import emit
from replog.common.errors import error_name
from replog.v1 import admin_pb2, admin_pb2_grpc, common_pb2

DELETE_RECORDS_TIMEOUT_S = 60


def add_parser(sub) -> None:
    delete = sub.add_parser("delete-records", help="delete the records below an offset of partitions")
    delete.add_argument("--offset-json-file", metavar="FILE", required=True,
                        help='{"partitions":[{"topic":"t","partition":0,"offset":42}],"version":1} (-1: the HW)')
    delete.set_defaults(run=run, parser=delete)


def run(args, channel) -> int:
    deletions = plan_files.read_offsets(args.offset_json_file)
    request = admin_pb2.DeleteRecordsRequest(partitions=[
        admin_pb2.RecordsDeletion(topic=t, partition=p, offset=o) for t, p, o in deletions])
    reply = admin_pb2_grpc.AdminServiceStub(channel).DeleteRecords(request, timeout=DELETE_RECORDS_TIMEOUT_S)
    rows = [{"topic": p.topic, "partition": p.partition, "low_watermark": p.low_watermark,
             "result": error_name(p.error_code), "message": p.error_message} for p in reply.partitions]
    failed = sum(1 for p in reply.partitions if p.error_code != common_pb2.ERROR_CODE_NONE)
    emit(args.output, {"partitions": rows},
         ("", ["TOPIC", "PARTITION", "LOW_WATERMARK", "RESULT", "DETAIL"],
          [[r["topic"], r["partition"], r["low_watermark"], r["result"], r["message"]] for r in rows]),
         lines=[f"Records deleted in {len(rows) - failed} partitions, {failed} failed."])
    return 1 if failed else 0
