"""The one place a SparkSession is built, for every job, the tests and the bench.

* ``--master`` defaults to ``local[*]``; under ``spark-submit`` an unset master
  keeps the one spark-submit was given, so the same file runs anywhere.
* ``PYSPARK_PYTHON`` is set to this interpreter when unset: Spark's Python
  workers (the ``replog`` data source runs in them) need the project's virtualenv,
  not whatever ``python3`` is first on PATH.
* Shuffle partitions are small on a local master (2 per core): our tables are at
  most a few million rows and Spark's default of 200 tasks costs seconds on 2 cores.
* The driver logs errors only (``log4j2.properties`` beside this file), so a job's
  output is its tables and a failure is one line.
* The Spark UI is off on a local master unless asked for (a CLI run has no use for a web
  server), and left to Spark (on) or to spark-submit's ``--conf`` on a cluster master.
* ``conf``: any other Spark settings (``--conf KEY=VALUE`` on the command line); under
  spark-submit, its own ``--conf`` settings stay as given unless named again here.
* The ``replog`` Python data source (source.py) is registered on every session.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

MASTER_DEFAULT = "local[*]"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands its port to the Python driver."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def local_cores(master: str) -> int | None:
    """Cores of a local master (local, local[4], local[*], local[2,3]); None for a cluster master."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master)
    if not match:
        return None
    count = match.group(1)
    if count is None:
        return 1
    return (os.cpu_count() or 1) if count == "*" else int(count)


@contextlib.contextmanager
def _stderr_to(path: str | None):
    """Point file descriptor 2 at ``path`` while the JVM starts: the JVM (and the Python
    workers it forks) inherit it, so the JVM's start-up lines that no log4j setting silences
    go to the log file instead of the one-line errors' stream. Python's own stderr is restored."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def build(master: str | None = None, app_name: str = "replog-spark", *,
          shuffle_partitions: int | None = None, driver_memory: str | None = None, jvm_log: str | None = None,
          ui: bool | None = None, conf: dict[str, str] | None = None):
    """A SparkSession (getOrCreate: a running session is reused, also its master).

    ``jvm_log``: a file for the JVM's own output (the command line passes one; tests and
    notebooks leave it on the terminal)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    if master is None and not under_spark_submit():
        master = MASTER_DEFAULT
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    cores = local_cores(master) if master else None
    if shuffle_partitions is None and cores is not None:
        shuffle_partitions = max(2, 2 * cores)
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if cores is not None:
        # A laptop whose host name resolves to a non-loopback address makes Spark warn
        # and bind there; a local job has no reason to leave loopback.
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    if ui is None and cores is not None and not under_spark_submit():
        ui = False
    if ui is not None:
        builder = builder.config("spark.ui.enabled", str(ui).lower())
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    java_options = f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    with _stderr_to(jvm_log):
        session = _create(builder, java_options)
    session.sparkContext.setLogLevel("ERROR")
    register_sources(session)
    return session


def _create(builder, java_options: str):
    return (builder
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.extraJavaOptions", java_options)
            .config("spark.executor.extraJavaOptions", java_options)
            .getOrCreate())


def register_sources(session) -> None:
    from replog.spark import register

    register(session)
