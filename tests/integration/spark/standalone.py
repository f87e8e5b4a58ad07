"""A Spark standalone cluster as separate processes: one master and its workers, loopback only.

Started with pyspark's own ``spark-class`` (``org.apache.spark.deploy.master.Master`` /
``...worker.Worker``), each JVM in a session of its own so that stopping one takes its children
(a worker's executors) too. Memory is kept small for a 2-core machine. ``stop()`` ends every
process it started, SIGTERM then SIGKILL, and is safe to call twice.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.integration.controller_helpers import wait_for

BIN = Path(sys.executable).parent
DAEMON_MEMORY = "256m"
WORKER_MEMORY = "1g"
STOP_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Standalone:
    def __init__(self, work_dir: Path, workers: int = 2) -> None:
        self.work_dir = work_dir
        self.workers = workers
        self.processes: dict[str, subprocess.Popen] = {}
        self.master_port = free_port()
        self.master_ui_port = free_port()

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _env(self) -> dict:
        return {**os.environ, "SPARK_DAEMON_MEMORY": DAEMON_MEMORY, "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(self.work_dir / "logs"), "PYSPARK_PYTHON": sys.executable,
                "SPARK_NO_DAEMONIZE": "1"}

    def _start(self, name: str, *args: str) -> None:
        log = open(self.work_dir / f"{name}.log", "wb")
        try:
            self.processes[name] = subprocess.Popen([str(BIN / "spark-class"), *args], stdout=log,
                                                    stderr=subprocess.STDOUT, env=self._env(),
                                                    start_new_session=True)
        finally:
            log.close()

    def start(self) -> None:
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.master_port), "--webui-port", str(self.master_ui_port))
        for index in range(1, self.workers + 1):
            work = self.work_dir / f"worker-{index}"
            work.mkdir(parents=True, exist_ok=True)
            self._start(f"worker-{index}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                        "--memory", WORKER_MEMORY, "--work-dir", str(work), self.master_url)
        wait_for(lambda: self.alive_workers() == self.workers, 180,
                 f"{self.workers} workers registered with the master", interval_s=1.0)

    def master_state(self) -> dict | None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"spark {name} exited with {process.returncode}: {self.log_tail(name)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui_port}/json/", timeout=5) as answer:
                return json.load(answer)
        except OSError:
            return None

    def alive_workers(self) -> int:
        state = self.master_state()
        return 0 if state is None else int(state.get("aliveworkers", 0))

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self.work_dir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def stop(self) -> None:
        """Workers first (their executors are children), then the master; each whole process group."""
        order = [n for n in self.processes if n != "master"] + [n for n in self.processes if n == "master"]
        for name in order:
            _stop_group(self.processes[name])

    def leftover_pids(self) -> list[int]:
        return [p.pid for p in self.processes.values() if p.poll() is None]


def _stop_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        _kill_group(process.pid, signal.SIGKILL)  # children it may have left
        return
    _kill_group(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(process.pid, signal.SIGKILL)
    process.wait(STOP_TIMEOUT_S)


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def all_gone(pids: list[int]) -> bool:
    return not any(group_alive(pid) for pid in pids)
