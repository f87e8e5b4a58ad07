"""replog-gateway: the process entry point (config, logging, bootstrap, signals)."""

from __future__ import annotations

import sys

from replog.common import service
from replog.common.config import load_config
from replog.gateway.config import GatewayConfig

PROG = "replog-gateway"


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        config = load_config(GatewayConfig, argv, prog=PROG, description="replog admin gateway")
        from replog.common.logs import setup_logging
        from replog.gateway.bootstrap import GatewayProcess

        setup_logging("gateway", config.gateway_id, config.log_level, config.log_format)
        stop = service.StopSignal()  # first: a stop while waiting for ZooKeeper ends the wait
        process = GatewayProcess(config)
        if process.start(stop.event):
            stop.wait()
        process.stop()
        return 0

    return service.run(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
