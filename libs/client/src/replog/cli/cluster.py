"""`replog cluster describe|status`."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.cli.output import emit
from replog.common.security.credentials import open_channel
from replog.v1 import admin_pb2, admin_pb2_grpc


def add_parser(sub) -> None:
    cluster = sub.add_parser("cluster", help="brokers, controller and their health")
    verbs = cluster.add_subparsers(dest="verb", required=True)
    verbs.add_parser("describe", help="brokers (id, endpoint, rack, alive, log directories, offline ones marked) "
                                      "and the active controller")
    verbs.add_parser("status", help="like describe, plus a health check of every broker")
    cluster.set_defaults(run=run)


def _health(address: str, tls) -> str:
    try:
        with open_channel(address, tls) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2.0)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    except grpc.RpcError:
        return "UNREACHABLE"


def run(args, channel: grpc.Channel) -> int:
    reply = admin_pb2_grpc.AdminServiceStub(channel).DescribeCluster(admin_pb2.DescribeClusterRequest(), timeout=10)
    brokers = []
    for b in reply.brokers:
        row = {"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack or None, "alive": b.alive,
               "log_dirs": [{"path": d.path, "offline": d.offline} for d in b.log_dirs]}
        if args.verb == "status":
            row["health"] = _health(f"{b.host}:{b.port}", args.tls) if b.alive else "DEAD"
        brokers.append(row)
    data = {"controller_id": reply.controller_id, "controller_epoch": reply.controller_epoch, "brokers": brokers}
    columns = ["BROKER", "ENDPOINT", "RACK", "ALIVE", "LOG DIRS"] + (["HEALTH"] if args.verb == "status" else [])
    rows = [[b["broker_id"], f"{b['host']}:{b['port']}", b["rack"], "yes" if b["alive"] else "no",
             ",".join(d["path"] + (" (OFFLINE)" if d["offline"] else "") for d in b["log_dirs"]) or None]
            + ([b["health"]] if args.verb == "status" else []) for b in brokers]
    controller = f"Active controller {reply.controller_id} (epoch {reply.controller_epoch})" \
        if reply.controller_id >= 0 else "No active controller"
    emit(args.output, data, ("", columns, rows), lines=[f"{controller}; {len(brokers)} broker(s)"])
    return 0
