"""Where the jobs write: a local path, or any URI Hadoop's FileSystem knows (s3a://, hdfs://, file://, abfs://...).

A job on a cluster writes where its executors and its user can reach, which is rarely the
driver's disk. Tables go through Spark's own writer, which takes any Hadoop path as it is.
The driver-side files (the planner's JSON, PNG charts) go through the same Hadoop FileSystem
the session is configured with (spark._jsc.hadoopConfiguration(): the s3a keys, core-site.xml),
so one URI works for every output. A plain path without a scheme stays a local path (created
with its parents), as it always was.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(location: str) -> bool:
    """True for "scheme://...": a Hadoop path, written through Hadoop's FileSystem."""
    return bool(_SCHEME.match(location))


def join(location: str, name: str) -> str:
    if is_uri(location):
        return location.rstrip("/") + "/" + name
    return str(Path(location) / name)


def make_dirs(spark, location: str) -> None:
    if is_uri(location):
        path, fs = _hadoop(spark, location)
        try:
            fs.mkdirs(path)
        except Exception as exc:
            raise OSError(f"cannot create {location}: {_java_message(exc)}") from None
    else:
        Path(location).mkdir(parents=True, exist_ok=True)


def write_bytes(spark, location: str, data: bytes) -> None:
    """Replace the file at ``location`` with ``data``."""
    if not is_uri(location):
        Path(location).write_bytes(data)
        return
    path, fs = _hadoop(spark, location)
    try:
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()
    except OSError:
        raise
    except Exception as exc:
        raise OSError(f"cannot write {location}: {_java_message(exc)}") from None


def write_text(spark, location: str, text: str) -> None:
    write_bytes(spark, location, text.encode())


class LocalFile:
    """A local file to draw into, copied to ``location`` on exit (a local ``location`` is drawn into directly)."""

    def __init__(self, spark, location: str) -> None:
        self.spark = spark
        self.location = location
        self._temp_dir: str | None = None

    def __enter__(self) -> Path:
        if not is_uri(self.location):
            return Path(self.location)
        self._temp_dir = tempfile.mkdtemp(prefix="replog-spark-out-")
        return Path(self._temp_dir) / os.path.basename(self.location.rstrip("/"))

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._temp_dir is None:
            return
        try:
            if exc_type is None:
                local = Path(self._temp_dir) / os.path.basename(self.location.rstrip("/"))
                write_bytes(self.spark, self.location, local.read_bytes())
        finally:
            shutil.rmtree(self._temp_dir, ignore_errors=True)


def _hadoop(spark, location: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    try:
        return path, path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    except Exception as exc:  # py4j's error for a JVM exception: no file system for the scheme, bad credentials
        raise OSError(f"{location}: {_java_message(exc)}") from None


def _java_message(exc: Exception) -> str:
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
