"""Where a hosted replica lives on disk: `<log_dir>/<topic>-<partition>/`.

Topic names may themselves contain '-', so a directory name is split at its
last '-' (Kafka's convention). Anything else in the log directory (the
checkpoint files, stray files) is not a partition.
"""

from __future__ import annotations

from pathlib import Path

from replog.broker.core.topic_partition import TopicPartition


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
