"""`replog-broker-shutdown`: ask the controller to move a running broker's leadership away (controlled
shutdown, docs/operations.md) from outside the broker, and wait until it has: a Kubernetes preStop hook,
so that a rolling restart moves leaders before the pod is stopped, or an operator's step before stopping
a broker by hand.

It reads the broker's settings as the broker did (from the command line of the container's main process,
`/proc/1/cmdline`, or the arguments given after `--`), reads the broker's registration epoch from
ZooKeeper with the broker's credentials, and calls ControlledShutdown with the broker's own certificate,
through the same bounded retries the broker uses on SIGTERM (control/controlled_shutdown.py). The broker
keeps serving its followers' fetches and stops later, on SIGTERM, when its own controlled shutdown finds
nothing left to move. Exit 0 when every partition it could move has moved (or it was not registered),
1 after giving up, 2 on a configuration error.
"""

from __future__ import annotations

import argparse
import sys

EXIT_DONE, EXIT_GAVE_UP, EXIT_USAGE = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    from replog.common.version import version_line

    parser = argparse.ArgumentParser(prog="replog-broker-shutdown", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=version_line("replog-broker"))
    parser.add_argument("arguments", nargs=argparse.REMAINDER,
                        help="the broker's arguments, after -- (default: those of process 1)")
    args = parser.parse_args(argv)
    from replog.common import grpc_runtime

    grpc_runtime.configure()
    from replog.broker.config import BrokerConfig
    from replog.common.config import ConfigError, load_config
    from replog.common.healthcheck import HealthcheckError, role_and_arguments, service_command
    from replog.common.logs import setup_logging

    try:
        if args.arguments:
            arguments = [a for a in args.arguments if a != "--"]
        else:
            role, arguments = role_and_arguments(service_command())
            if role != "broker":
                raise HealthcheckError(f"process 1 is replog-{role}, not a broker")
        config = load_config(BrokerConfig, arguments, prog="replog-broker")
    except (HealthcheckError, ConfigError) as exc:
        print(f"replog-broker-shutdown: {exc}", file=sys.stderr)
        return EXIT_USAGE
    setup_logging("broker-shutdown", str(config.broker_id), "info")
    return EXIT_DONE if move_leadership(config) else EXIT_GAVE_UP


def move_leadership(config) -> bool:
    from kazoo.exceptions import NoNodeError

    from replog.broker.control.controlled_shutdown import controlled_shutdown
    from replog.broker.control.controller_link import ControllerLink
    from replog.common.channels import ChannelCache
    from replog.common.security.files import TlsFiles
    from replog.common.zk import schema
    from replog.common.zk.auth import ZkEndpoint, load_credentials
    from replog.common.zk.client import ZkClient
    from replog.common.zk.schema import znode_acls
    from replog.common.zk.tls import zookeeper_tls_files

    credentials = load_credentials(config.zookeeper_credentials_file, znode_acls.broker_identity(config.broker_id))
    zk = ZkClient(ZkEndpoint(config.zookeeper, credentials, zookeeper_tls_files(config)),
                  session_timeout_ms=config.zookeeper_session_timeout_ms)
    zk.start()
    tls = None if config.insecure else TlsFiles(config.tls_ca_file, config.tls_cert_file, config.tls_key_file)
    channels = ChannelCache(tls)
    try:
        try:
            _, stat = zk.kazoo.get(schema.broker_path(config.broker_id))
        except NoNodeError:
            print(f"broker {config.broker_id} is not registered: nothing to move")
            return True
        link = ControllerLink(zk, channels)
        link.start()
        return controlled_shutdown(link, config.broker_id, stat.czxid)
    finally:
        channels.close()
        zk.stop()


if __name__ == "__main__":
    sys.exit(main())
