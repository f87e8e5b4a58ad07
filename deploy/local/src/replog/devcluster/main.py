"""replog-local: bring a local cluster up, down, or show it (`make up/down/status`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from replog.common.version import version_line
from replog.devcluster import netns, zk_credentials
from replog.devcluster.cluster import LocalCluster
from replog.devcluster.netns import HostsUnavailable
from replog.devcluster.spec import ClusterError, ClusterSpec
from replog.devcluster.zookeeper import ZooKeeperMissing


def _print_status(cluster: LocalCluster) -> None:
    rows = cluster.status()
    width = max(len(r["name"]) for r in rows)
    print(f"{'process':<{width}}  {'state':<9}  {'pid':>7}  {'endpoint':<21}  {'metrics':>7}  {'kafka':>7}  rack")
    for r in rows:
        state = "healthy" if r["healthy"] else ("running" if r["running"] else "stopped")
        print(f"{r['name']:<{width}}  {state:<9}  {r['pid'] or '-':>7}  {r['address']:<21}  "
              f"{r['metrics_port'] or '-':>7}  {r['kafka_port'] or '-':>7}  {r['rack'] or '-'}")


def _write_credentials(cluster: LocalCluster, name: str) -> int:
    if zk_credentials.super_credentials(cluster.state_dir) is None:
        print("replog-local: this cluster runs without ZooKeeper authentication; no credentials needed",
              file=sys.stderr)
        return 2
    role, _, number = name.rpartition("-")
    if role not in ("controller", "broker", "gateway") or not number.isdigit():
        print(f"replog-local: {name!r} is not controller-<id>, broker-<id> or gateway-<id>", file=sys.stderr)
        return 2
    names = [n for n, p in cluster.processes.items() if p.role != "zookeeper"]
    zk_credentials.generate(cluster.state_dir, sorted({*names, name}))
    print(zk_credentials.credentials_dir(cluster.state_dir) / name)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="replog-local", description="local replog cluster")
    parser.add_argument("--version", action="version", version=version_line("replog-devcluster"))
    parser.add_argument("--state-dir", default=os.environ.get("REPLOG_STATE_DIR", ".state"),
                        help="where the cluster keeps its files (default .state)")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start every process and wait until healthy")
    up.add_argument("--insecure", action="store_true",
                    help="a new cluster runs plaintext, without certificates, authorization or ZooKeeper authentication "
                         "(default: mutual TLS and authenticated ZooKeeper sessions)")
    up.add_argument("--zookeeper-servers", type=int, default=1, metavar="N",
                    help="a new cluster's ZooKeeper: 1 standalone server (default), or an ensemble of N (3: any one "
                         "server may die; docs/zookeeper.md)")
    up.add_argument("--hosts", action="store_true",
                    help="a new cluster runs each process on a host of its own: a network namespace with its own "
                         "address on a bridge (needs root, iproute2, nftables; docs/testing.md)")
    sub.add_parser("down", help="stop every process and remove the multi-host layout's network (and any leftover "
                                "of a killed run)")
    status = sub.add_parser("status", help="show the processes")
    status.add_argument("--output", choices=["table", "json"], default="table")
    extra = sub.add_parser("credentials", help="write the ZooKeeper credentials file of a process started by hand "
                                               "(e.g. broker-4) and print its path")
    extra.add_argument("extra_name", metavar="name")
    for verb in ("kill", "stop", "start"):
        p = sub.add_parser(verb, help=f"{verb} one process (e.g. broker-2)")
        p.add_argument("name")
    args = parser.parse_args(argv)
    insecure = getattr(args, "insecure", False)  # plaintext and anonymous ZooKeeper sessions, both or neither
    spec = ClusterSpec(insecure=insecure, zookeeper_auth=not insecure, hosts=getattr(args, "hosts", False),
                       zookeeper_servers=getattr(args, "zookeeper_servers", 1))
    try:
        # owner_pid 0: the network of `up --hosts` outlives this command, until `down`.
        cluster = LocalCluster(Path(args.state_dir), spec, owner_pid=0)
    except ClusterError as exc:
        print(f"replog-local: {exc}", file=sys.stderr)
        return 2
    try:
        if args.command == "up":
            cluster.up()
            _print_status(cluster)
            over = " (TLS only: a client shows a certificate of the cluster's CA)" if cluster.zookeeper_tls else ""
            print(f"\nZooKeeper {cluster.zookeeper_connect}{over}; gateway {cluster.gateway_address} "
                  f"(replog --gateway {cluster.gateway_address}); logs in {cluster.log_dir}")
            operator = cluster.operator_tls
            print("plaintext, no authorization (--insecure)" if operator is None else
                  f"mutual TLS: replog finds the operator certificate {operator.cert_file} by itself; "
                  f"for other tools: . {Path(operator.ca_file).parent / 'env'} (docs/security.md)")
            if cluster.network is not None:
                layout = cluster.network.layout
                print(f"hosts: one network namespace per process on bridge {layout.bridge} ({layout.network}; this "
                      f"namespace is {layout.root_address}); the client host: "
                      f"ip netns exec {layout.namespace('client')} replog --gateway {cluster.gateway_address} ...")
            credentials = zk_credentials.credentials_dir(cluster.state_dir) / zk_credentials.SUPER_USER
            print(f"ZooKeeper's super user: {credentials}" if credentials.exists() else
                  "ZooKeeper without authentication: sessions are anonymous, znodes open to anyone")
        elif args.command == "down":
            swept = netns.sweep()
            if swept:
                print(f"removed the network of {len(swept)} cluster(s) no longer running: {', '.join(swept)}")
            if not cluster.processes:
                print("no cluster state; nothing to stop")
                return 0
            cluster.down()
            print("stopped")
        elif args.command == "status":
            if not cluster.processes:
                print("no cluster has been started here (make up)")
                return 0
            if args.output == "json":
                print(json.dumps(cluster.status(), indent=2))
            else:
                _print_status(cluster)
        elif args.command == "credentials":
            return _write_credentials(cluster, args.extra_name)
        elif args.name not in cluster.processes:
            print(f"replog-local: no process named {args.name!r}", file=sys.stderr)
            return 2
        elif args.command == "kill":
            cluster.kill(args.name)
        elif args.command == "stop":
            cluster.stop(args.name)
        elif args.command == "start":
            cluster.start(args.name)
            cluster.wait_healthy([args.name])
    except (ClusterError, ZooKeeperMissing, HostsUnavailable) as exc:
        print(f"replog-local: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
