"""Where a hosted replica lives on disk: `<log_dir>/<topic>-<partition>/`.

Topic names may themselves contain '-', so a directory name is split at its
last '-' (Kafka's convention). Anything else in the log directory (the
checkpoint files, stray files) is not a partition.

A deleted replica's directory is first renamed aside, to
`<topic>-<partition>.<random hex>-delete` (Kafka's convention too), and removed
in the background: a rename is one metadata operation, removing the files is
several (docs/perf/replica-deletion.md).
Such a name is not a partition (its last '-' is followed by "delete"); one left
by a crash is removed at the next start.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from replog.common.core.partitions import TopicPartition


def partition_directory(log_dir: Path, topic_partition: TopicPartition) -> Path:
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
    """Where a deleted replica's `directory` is renamed to before it is removed."""
    return directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{SET_ASIDE_SUFFIX}")


def set_aside_directories(log_dir: Path) -> list[Path]:
    """Directories of deleted replicas not removed yet (the broker stopped first)."""
    return sorted(path for path in log_dir.iterdir() if path.name.endswith(SET_ASIDE_SUFFIX) and path.is_dir())
