"""replog-spark: the Spark jobs' command line.

    replog-spark report    --export DIR | --gateway HOST:PORT  [--out DIR]
    replog-spark plan      --export DIR | --gateway HOST:PORT  [--add-brokers 7,8 --racks 7:a,8:b]
                           [--remove-brokers 3] --out FILE
    replog-spark failovers --traces DIR_OR_FILE [...] [--out DIR]
    replog-spark traffic   --bootstrap HOST:PORT --subscribe TOPICS --gateway HOST:PORT [--out DIR]

report, plan (with --gateway) and traffic call the cluster: they take the replog command line's
--tls-ca-file, --tls-cert-file, --tls-key-file and --insecure (default: REPLOG_TLS_*, else the
local cluster's operator certificate) and hand them to the replog sources' TLS options.

Every job also runs as ``spark-submit spark/src/replog/spark/<job>.py ...`` with
the same options. ``--master`` defaults to ``local[*]`` (under spark-submit: the
master spark-submit was given). Exit codes: 0 ok, 1 error (one line on stderr),
2 usage.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile

from replog.common.version import version_line

JOBS = {
    "report": ("replog.spark.report", "topology report: load per broker and topic, skew, rack diversity"),
    "plan": ("replog.spark.planner", "rebalance plan: a Kafka reassignment JSON moving as few replicas as possible"),
    "failovers": ("replog.spark.failovers", "failover report from trace files: phases, percentiles, trends"),
    "traffic": ("replog.spark.leader_traffic", "records joined with topology: bytes each partition leader serves"),
}


class JobError(Exception):
    """A failure to report in one line with exit code 1."""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default: local[*]; under spark-submit, the one it was given)")
    parser.add_argument("--shuffle-partitions", type=int, default=None, metavar="N",
                        help="spark.sql.shuffle.partitions (default: 2 per core on a local master)")
    parser.add_argument("--driver-memory", default=None, metavar="SIZE",
                        help="spark.driver.memory when the driver starts here (e.g. 4g)")
    parser.add_argument("--ui", action=argparse.BooleanOptionalAction, default=None,
                        help="serve the Spark UI (default: off on a local master, on for a cluster master; "
                             "under spark-submit, what it was given)")
    parser.add_argument("--conf", action="append", type=parse_conf, default=[], metavar="KEY=VALUE",
                        help="any Spark setting, repeatable (e.g. spark.executor.memory=1g, spark.driver.host=...)")


def parse_conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value


def job_parser(name: str, prog: str | None = None) -> argparse.ArgumentParser:
    module_name, description = JOBS[name]
    parser = argparse.ArgumentParser(prog=prog or f"replog-spark {name}", description=description)
    importlib.import_module(module_name).add_arguments(parser)
    _common(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="replog-spark", description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    parser.add_argument("--version", action="version", version=version_line("replog-spark"))
    sub = parser.add_subparsers(dest="job", required=True, metavar="JOB")
    for name, (module_name, description) in JOBS.items():
        child = sub.add_parser(name, help=description, description=description)
        importlib.import_module(module_name).add_arguments(child)
        _common(child)
    return parser


def execute(name: str, args: argparse.Namespace) -> int:
    """Build the session, run the job, turn every expected failure into one line. The JVM's log is kept only
    when a failure points at it; every other run removes it (one file a run would pile up in the temp dir)."""
    from replog.spark.schema import ExportError

    module = importlib.import_module(JOBS[name][0])
    jvm_log = os.path.join(tempfile.gettempdir(), f"replog-spark-{os.getpid()}.log")
    keep_log = False
    try:
        check = getattr(module, "check_inputs", None)
        if check is not None:
            check(args)  # fails before Spark starts when it can
        from replog.spark import session

        spark = session.build(args.master, f"replog-spark {name}", shuffle_partitions=args.shuffle_partitions,
                              driver_memory=args.driver_memory, jvm_log=jvm_log, ui=args.ui,
                              conf=dict(args.conf))
        return module.run(spark, args)
    except (ExportError, JobError) as exc:
        return fail(str(exc))
    except OSError as exc:  # a file or directory that cannot be read or written
        return fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except Exception as exc:
        from pyspark.errors import PySparkException

        keep_log = True
        if isinstance(exc, PySparkException):
            return fail(f"{_first_line(exc)} (Spark's log: {jvm_log})")
        raise
    except KeyboardInterrupt:
        return fail("interrupted")
    finally:
        if not keep_log:
            with contextlib.suppress(FileNotFoundError):
                os.remove(jvm_log)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        # A Python worker's failure arrives wrapped in a JVM trace; the cause's own line is the useful one.
        if "ExportError: " in line:
            return line.split("ExportError: ", 1)[1]
    return text.splitlines()[0] if text else type(exc).__name__


def fail(message: str) -> int:
    print(f"replog-spark: error: {message}", file=sys.stderr)
    return 1


def run_job(name: str, argv: list[str] | None = None) -> int:
    """Entry of ``spark-submit <job>.py``: that job's options only."""
    args = job_parser(name, prog=f"{name}.py").parse_args(argv)
    return execute(name, args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # exits 2 on a usage error
    return execute(args.job, args)


if __name__ == "__main__":
    sys.exit(main())
