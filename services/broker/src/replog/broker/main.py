"""replog-broker: the process entry point (config, logging, bootstrap, signals)."""

from __future__ import annotations

import logging
import sys

from replog.broker.config import BrokerConfig
from replog.common import service
from replog.common.config import load_config

PROG = "replog-broker"


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        config = load_config(BrokerConfig, argv, prog=PROG, description="replog storage broker")
        from replog.broker.bootstrap import BrokerProcess
        from replog.broker.runtime import diagnostics
        from replog.common.logs import setup_logging

        setup_logging("broker", str(config.broker_id), config.log_level, config.log_format)
        open_files = service.raise_open_files_limit()
        logging.getLogger(PROG).info("open files limit %d (the hosted logs' descriptor budget is derived from it)",
                                     open_files)
        stop = service.StopSignal()  # first: a stop while waiting for ZooKeeper ends the wait
        diagnostics.install_heap_report()
        process = BrokerProcess(config)
        with diagnostics.profiled_startup():
            started = process.start(stop.event)
        if started:
            stop.wait()
        process.stop()
        return 0

    return service.run(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
