"""Shared pieces of the gateway and CLI tests: a module's running cluster, a kazoo
client, and the CLI run in-process with its output captured."""

from __future__ import annotations

from kazoo.client import KazooClient

from replog.cli.main import main
from replog.devcluster import LocalCluster


def running_cluster(base, spec):
    """A LocalCluster started in `base` and always killed at the end (a generator for fixtures).

    `up()` returns once every process reports SERVING; a broker does so only after
    it has registered in /brokers/ids, so the gateway sees every broker."""
    cluster = LocalCluster(base, spec)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.discard()


def kazoo_client(cluster):
    client = KazooClient(**cluster.zookeeper_endpoint.kazoo_args())
    client.start()
    try:
        yield client
    finally:
        client.stop()
        client.close()


def cli_runner(cluster, capsys):
    """`run(*argv) -> (exit code, stdout, stderr)` of the replog CLI against the cluster's gateway."""
    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(["--gateway", cluster.gateway_address, *argv])
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run
