"""Which fetcher follows a partition: one per partition, the same one wherever it is computed."""

from __future__ import annotations

from replog.broker.replication.fetcher_manager import FetcherManager, fetcher_index
from replog.common.core.partitions import TopicPartition


class FakeFetcher:
    """Records what the manager asks of one fetcher (its thread and transport are not under test)."""

    def __init__(self, leader_id: int, fetcher_id: int) -> None:
        self.key = (leader_id, fetcher_id)
        self.partitions: dict[TopicPartition, int] = {}
        self.started = self.stopped = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def add(self, partitions, trace_context) -> None:
        self.partitions.update(partitions)

    def remove(self, partitions) -> None:
        for tp in partitions:
            self.partitions.pop(tp, None)


def manager(per_leader: int) -> tuple[FetcherManager, dict[tuple[int, int], FakeFetcher]]:
    made: dict[tuple[int, int], FakeFetcher] = {}

    def make(leader_id: int, fetcher_id: int) -> FakeFetcher:
        made[(leader_id, fetcher_id)] = FakeFetcher(leader_id, fetcher_id)
        return made[(leader_id, fetcher_id)]

    return FetcherManager(make, per_leader), made


PARTITIONS = [TopicPartition(topic, p) for topic in ("orders", "clicks") for p in range(50)]


def test_a_leaders_partitions_are_split_over_its_fetchers_each_partition_on_one():
    fetchers, made = manager(2)
    fetchers.add(2, [(tp, 5) for tp in PARTITIONS], None)
    assert set(made) == {(2, 0), (2, 1)} and all(f.started for f in made.values())
    halves = [set(made[(2, i)].partitions) for i in (0, 1)]
    assert halves[0] | halves[1] == set(PARTITIONS) and not halves[0] & halves[1]
    assert all(abs(len(half) - 50) <= 2 for half in halves)  # consecutive partitions alternate
    assert all(made[(2, 0)].partitions[tp] == 5 for tp in halves[0])  # with the leader epoch given
    assert fetchers.fetched_partitions() == {tp: 2 for tp in PARTITIONS}


def test_a_partition_moving_to_a_new_leader_leaves_its_old_fetcher():
    fetchers, made = manager(2)
    fetchers.add(1, [(tp, 3) for tp in PARTITIONS], None)
    moved = PARTITIONS[:10]
    fetchers.add(2, [(tp, 4) for tp in moved], None)
    on_old = set(made[(1, 0)].partitions) | set(made[(1, 1)].partitions)
    on_new = set().union(*(f.partitions for key, f in made.items() if key[0] == 2))
    assert on_old == set(PARTITIONS[10:]) and on_new == set(moved)
    fetchers.remove(moved[:3])
    assert set().union(*(f.partitions for f in made.values())) == set(PARTITIONS[3:])
    fetchers.stop()
    assert all(f.stopped for f in made.values())


def test_one_fetcher_per_leader_takes_everything():
    fetchers, made = manager(1)
    fetchers.add(3, [(tp, 1) for tp in PARTITIONS], None)
    assert set(made) == {(3, 0)} and set(made[(3, 0)].partitions) == set(PARTITIONS)


def test_the_choice_does_not_depend_on_the_process():
    # str hashes are salted per process; the split must not depend on them, or a restarted broker's
    # fetchers would name their partitions in other sessions than before. Pinned: CRC-32 of the topic.
    assert [fetcher_index(TopicPartition("orders", p), 3) for p in range(6)] == [2, 0, 1, 2, 0, 1]
    assert [fetcher_index(TopicPartition("clicks", p), 3) for p in range(6)] == [0, 1, 2, 0, 1, 2]
