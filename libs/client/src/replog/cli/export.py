"""`replog export --format parquet|ndjson --out DIR`: the topology tables as files.

Reads the gateway's ExportTopology stream (the gateway stays stateless) and
writes the tables with export_files; docs/export-schema.md lists their columns.
"""

from __future__ import annotations

import time
from pathlib import Path

from replog.cli import export_files
from replog.cli.args import positive
from replog.cli.output import emit
from replog.common.channels import ADMIN_RPC_TIMEOUT_S
from replog.v1 import admin_pb2, admin_pb2_grpc

BATCH_SIZE_DEFAULT = 2000


def add_parser(sub) -> None:
    export = sub.add_parser("export", help="write the topology tables (cluster, brokers, partitions, groups, "
                                           "group_offsets) to files")
    export.add_argument("--format", choices=export_files.FORMATS, default="parquet")
    export.add_argument("--out", required=True, metavar="DIR", help="directory to write into (created if missing)")
    export.add_argument("--log-stats", action="store_true",
                        help="also ask every live broker for LEO, HW and size per partition")
    export.add_argument("--groups", action="store_true",
                        help="also ask every live broker for the consumer groups it coordinates and their committed "
                             "offsets and lag (the groups and group_offsets tables; empty otherwise)")
    export.add_argument("--batch-size", type=positive, default=BATCH_SIZE_DEFAULT,
                        help="partition rows per stream message")
    export.set_defaults(run=run)


def export_to(channel, out_dir: Path, fmt: str, *, log_stats: bool = False, groups: bool = False,
              batch_size: int = BATCH_SIZE_DEFAULT) -> dict:
    """Stream the topology from the gateway and write it; returns the manifest."""
    export_files.require_format(fmt)
    request = admin_pb2.ExportTopologyRequest(include_log_stats=log_stats, include_groups=groups,
                                              partition_batch_size=batch_size)
    stream = admin_pb2_grpc.AdminServiceStub(channel).ExportTopology(request, timeout=ADMIN_RPC_TIMEOUT_S * 4)
    return export_files.write(export_files.collect(stream), out_dir, fmt)


def run(args, channel) -> int:
    started = time.monotonic()
    manifest = export_to(channel, Path(args.out), args.format, log_stats=args.log_stats, groups=args.groups,
                         batch_size=args.batch_size)
    seconds = time.monotonic() - started
    counts = {t: info["rows"] for t, info in manifest["tables"].items()}
    emit(args.output, {"out": str(Path(args.out).resolve()), "seconds": round(seconds, 3), **manifest},
         lines=[f"Exported {counts['partitions']} partitions, {counts['brokers']} brokers, {counts['groups']} groups "
                f"and the cluster row to {args.out} ({args.format}, schema version {manifest['schema_version']}) "
                f"in {seconds:.2f} s."])
    return 0
