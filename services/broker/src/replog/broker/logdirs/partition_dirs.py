"""Where a hosted replica lives on disk: `<log_dir>/<topic>-<partition>/`.

Topic names may themselves contain '-', so a directory name is split at its
last '-' (Kafka's convention). Anything else in the log directory (the
checkpoint files, stray files) is not a partition.

A deleted replica's directory is first renamed aside, to
`<topic>-<partition>.<random hex>-delete` (Kafka's convention too), and removed
in the background: a rename is one metadata operation, removing the files is
several (docs/perf/replica-deletion.md).
Such a name is not a partition (its last '-' is followed by "delete"); one left
by a crash is removed at the next start. The set-aside name keeps as much of the
directory's name as fits a file system's 255-byte limit (a topic's name may be
249 characters long), as Kafka does.

Every directory name is built from a legal topic name (core/names.py) and a partition
number, so it names one directory inside its log directory and fits a file name: the
services refuse any request naming another, and `partition_directory` refuses one too
rather than touch a path outside the log directory.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from replog.common.core.names import FILE_NAME_BYTES_MAX, partition_directory_name_problem
from replog.common.core.partitions import TopicPartition


class IllegalPartitionName(ValueError):
    """A partition whose directory would not be one legal name inside its log directory."""


def partition_directory(log_dir: Path, topic_partition: TopicPartition) -> Path:
    problem = partition_directory_name_problem(topic_partition.topic, topic_partition.partition)
    if problem is not None:
        raise IllegalPartitionName(problem)
    return log_dir / f"{topic_partition.topic}-{topic_partition.partition}"


def parse_partition_directory(name: str) -> TopicPartition | None:
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit():
        return None
    return TopicPartition(topic, int(partition))


def local_partition_directories(log_dir: Path) -> dict[TopicPartition, Path]:
    found: dict[TopicPartition, Path] = {}
    for path in sorted(log_dir.iterdir()):
        topic_partition = parse_partition_directory(path.name) if path.is_dir() else None
        if topic_partition is not None:
            found[topic_partition] = path
    return found


SET_ASIDE_SUFFIX = "-delete"


def set_aside_directory(directory: Path) -> Path:
    """Where a deleted replica's `directory` is renamed to before it is removed (within a file name's limit)."""
    suffix = f".{uuid.uuid4().hex}{SET_ASIDE_SUFFIX}"
    kept = directory.name[:FILE_NAME_BYTES_MAX - len(suffix)]  # ASCII: characters are bytes
    return directory.with_name(f"{kept}{suffix}")


def set_aside_directories(log_dir: Path) -> list[Path]:
    """Directories of deleted replicas not removed yet (the broker stopped first)."""
    return sorted(path for path in log_dir.iterdir() if path.name.endswith(SET_ASIDE_SUFFIX) and path.is_dir())
