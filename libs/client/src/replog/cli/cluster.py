"""`replog cluster describe|status`.

`status --exit-when-healthy` makes the exit status say whether the cluster is healthy (rpk's flag):
0 when a controller is active, every broker is alive and answers SERVING with no offline log
directory, and no partition is unavailable or under-replicated; 1 otherwise, naming what is not.
With `--wait-s N` it looks again every second for up to N seconds before it gives that answer, for
scripts that wait for a cluster to come up or to heal.
"""

from __future__ import annotations

import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.cli.output import emit, fail
from replog.common.security.credentials import open_channel
from replog.v1 import admin_pb2, admin_pb2_grpc


def add_parser(sub) -> None:
    cluster = sub.add_parser("cluster", help="brokers, controller and their health")
    verbs = cluster.add_subparsers(dest="verb", required=True)
    verbs.add_parser("describe", help="brokers (id, endpoint, rack, alive, log directories, offline ones marked) "
                                      "and the active controller")
    status = verbs.add_parser("status", help="like describe, plus a health check of every broker")
    status.add_argument("--exit-when-healthy", action="store_true",
                        help="exit 0 only when the cluster is healthy (a controller, every broker alive and serving, "
                             "no offline log dir, no unavailable or under-replicated partition), else 1")
    status.add_argument("--wait-s", type=float, default=0.0, metavar="S",
                        help="with --exit-when-healthy: look again every second for up to S seconds")
    cluster.set_defaults(run=run)


def _health(address: str, tls) -> str:
    try:
        with open_channel(address, tls) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2.0)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    except grpc.RpcError:
        return "UNREACHABLE"


def run(args, channel: grpc.Channel) -> int:
    if not getattr(args, "exit_when_healthy", False):
        _show(args, channel)
        return 0
    deadline = time.monotonic() + max(args.wait_s, 0.0)
    while True:
        data = _show(args, channel, quiet=True)
        problems = _problems(data, channel)
        if not problems or time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    _show(args, channel, data=data)
    if problems:
        return fail("the cluster is not healthy: " + "; ".join(problems))
    return 0


def _problems(data: dict, channel: grpc.Channel) -> list[str]:
    """What keeps the cluster from being healthy (empty when it is)."""
    problems = []
    if data["controller_id"] < 0:
        problems.append("no active controller")
    for b in data["brokers"]:
        if b["health"] != "SERVING":
            problems.append(f"broker {b['broker_id']} is {b['health']}")
        offline = [d["path"] for d in b["log_dirs"] if d["offline"]]
        if offline:
            problems.append(f"broker {b['broker_id']} has offline log dir(s) {', '.join(offline)}")
    stub = admin_pb2_grpc.AdminServiceStub(channel)
    for name, flag in (("unavailable", admin_pb2.PARTITION_FILTER_UNAVAILABLE),
                       ("under-replicated", admin_pb2.PARTITION_FILTER_UNDER_REPLICATED)):
        reply = stub.DescribeTopics(admin_pb2.DescribeTopicsRequest(filter=flag), timeout=10)
        count = sum(len(t.partitions) for t in reply.topics)
        if count:
            problems.append(f"{count} {name} partition(s)")
    return problems


def _show(args, channel: grpc.Channel, *, quiet: bool = False, data: dict | None = None) -> dict:
    if data is not None:
        _emit(args, data)
        return data
    reply = admin_pb2_grpc.AdminServiceStub(channel).DescribeCluster(admin_pb2.DescribeClusterRequest(), timeout=10)
    brokers = []
    for b in reply.brokers:
        row = {"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack or None, "alive": b.alive,
               "log_dirs": [{"path": d.path, "offline": d.offline} for d in b.log_dirs]}
        if args.verb == "status":
            row["health"] = _health(f"{b.host}:{b.port}", args.tls) if b.alive else "DEAD"
        brokers.append(row)
    data = {"controller_id": reply.controller_id, "controller_epoch": reply.controller_epoch, "brokers": brokers}
    if not quiet:
        _emit(args, data)
    return data


def _emit(args, data: dict) -> None:
    brokers = data["brokers"]
    columns = ["BROKER", "ENDPOINT", "RACK", "ALIVE", "LOG DIRS"] + (["HEALTH"] if args.verb == "status" else [])
    rows = [[b["broker_id"], f"{b['host']}:{b['port']}", b["rack"], "yes" if b["alive"] else "no",
             ",".join(d["path"] + (" (OFFLINE)" if d["offline"] else "") for d in b["log_dirs"]) or None]
            + ([b["health"]] if args.verb == "status" else []) for b in brokers]
    controller = f"Active controller {data['controller_id']} (epoch {data['controller_epoch']})" \
        if data["controller_id"] >= 0 else "No active controller"
    emit(args.output, data, ("", columns, rows), lines=[f"{controller}; {len(brokers)} broker(s)"])
