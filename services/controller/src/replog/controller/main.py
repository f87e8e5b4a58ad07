"""replog-controller: the process entry point (config, logging, bootstrap, signals)."""

from __future__ import annotations

import sys

from replog.common import service
from replog.common.config import load_config
from replog.controller.config import ControllerConfig

PROG = "replog-controller"


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        config = load_config(ControllerConfig, argv, prog=PROG, description="replog controller")
        from replog.common.logs import setup_logging
        from replog.controller.bootstrap import ControllerProcess

        setup_logging("controller", str(config.controller_id), config.log_level, config.log_format)
        stop = service.StopSignal()  # first: a stop while waiting for ZooKeeper ends the wait
        process = ControllerProcess(config)
        if process.start(stop.event):
            stop.wait()
        process.stop()
        return 0

    return service.run(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
