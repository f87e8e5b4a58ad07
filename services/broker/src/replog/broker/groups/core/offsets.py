"""The committed offsets of the groups in one offsets partition, latest value per key.

Theory of operation. The table is the fold of the partition's offset records in log order: a
value replaces the key's earlier one and a tombstone removes it, so loading a partition from its
start and applying each commit as it is acknowledged give the same table. Nothing is applied
before its record is replicated (decide, persist, apply): a commit's values reach the table only
after the adapter's acks=all append succeeded. Appends of concurrent commits may be applied in
another order than they were written, so each value carries its record's log offset and an older
one never replaces a newer one.
"""

from __future__ import annotations

from replog.broker.groups.core.model import CommittedOffset
from replog.common.core.partitions import TopicPartition


class OffsetTable:
    def __init__(self) -> None:
        self._by_group: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        self._written_at: dict[tuple[str, TopicPartition], int] = {}  # the log offset of each key's value

    def put(self, group_id: str, tp: TopicPartition, committed: CommittedOffset | None, log_offset: int = -1) -> None:
        """Apply one record (written at `log_offset`, -1 when unknown); None is a tombstone."""
        if log_offset >= 0:
            if log_offset < self._written_at.get((group_id, tp), -1):
                return  # a newer value of this key is applied already
            self._written_at[(group_id, tp)] = log_offset
        if committed is None:
            offsets = self._by_group.get(group_id)
            if offsets is not None:
                offsets.pop(tp, None)
                if not offsets:
                    del self._by_group[group_id]
            return
        self._by_group.setdefault(group_id, {})[tp] = committed

    def of_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return dict(self._by_group.get(group_id, {}))

    def get(self, group_id: str, tp: TopicPartition) -> CommittedOffset | None:
        return self._by_group.get(group_id, {}).get(tp)

    def drop_group(self, group_id: str) -> list[TopicPartition]:
        """Forget a deleted group; the partitions whose tombstones the adapter appended."""
        return sorted(self._by_group.pop(group_id, {}))

    def groups(self) -> list[str]:
        return sorted(self._by_group)

    def drop_topic(self, topic: str) -> list[tuple[str, TopicPartition]]:
        """Forget a deleted topic's offsets in every group; what was dropped."""
        dropped = []
        for group_id in list(self._by_group):
            for tp in [tp for tp in self._by_group[group_id] if tp.topic == topic]:
                self.put(group_id, tp, None)
                dropped.append((group_id, tp))
        return dropped
