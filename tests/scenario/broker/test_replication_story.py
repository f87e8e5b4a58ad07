"""Replication stories: three brokers' cores, a fake controller, fake logs and a manual clock.

Each test reads as a story; the cluster checks its invariants after every
chapter (single leader per epoch, HW monotonic, no committed record lost).
"""

from replog.broker.core.errors import ErrorCode
from replog.broker.core.isr.isr_proposal import IsrChangeKind
from replog.broker.core.partition import ReplicaRole
from replog.common.clock import ManualClock
from tests.scenario.broker.sim_cluster import SimCluster
from tests.scenario.broker.sim_members import REPLICA_LAG_TIME_MAX_MS


def fetch_rounds(cluster: SimCluster, rounds: int, followers=(2, 3)) -> None:
    for _ in range(rounds):
        for follower_id in followers:
            cluster.fetch(follower_id)
        cluster.check_invariants()


def started_cluster() -> SimCluster:
    cluster = SimCluster(ManualClock())
    cluster.start()
    cluster.check_invariants()
    return cluster


def test_produce_then_followers_fetch_and_the_hw_advances():
    cluster = started_cluster()
    leader = cluster.broker(1)
    assert leader.role is ReplicaRole.LEADER and cluster.broker(2).role is ReplicaRole.FOLLOWER

    ticket = cluster.produce("order-1")  # acks=-1
    assert not ticket.done and ticket.base_offset == 0

    # Round 1: followers copy the record; the leader learns nothing yet about their LEOs.
    fetch_rounds(cluster, 1)
    assert cluster.logs() == {1: ["order-1"], 2: ["order-1"], 3: ["order-1"]}
    assert leader.replica.high_watermark == 0 and not ticket.done

    # Round 2: their next fetch offsets prove they hold it -> HW 1, the produce is acknowledged.
    fetch_rounds(cluster, 1)
    assert leader.replica.high_watermark == 1
    assert ticket.ok

    # Round 3: followers learn the HW from the response.
    fetch_rounds(cluster, 1)
    assert cluster.broker(2).replica.high_watermark == cluster.broker(3).replica.high_watermark == 1


def test_acks_one_answers_at_once_and_acks_all_times_out_without_followers():
    cluster = started_cluster()
    assert cluster.produce("fast", acks=1).ok
    slow = cluster.produce("slow", acks=-1)
    cluster.tick(5_000)
    assert slow.error_code is ErrorCode.REQUEST_TIMED_OUT
    assert cluster.produce("bad", acks=2).error_code is ErrorCode.INVALID_REQUIRED_ACKS
    assert cluster.produce("wrong broker", acks=1, broker_id=2).error_code is ErrorCode.NOT_LEADER


def test_silent_follower_leaves_the_isr_and_returns_when_caught_up():
    cluster = started_cluster()
    leader = cluster.broker(1)
    cluster.produce("a")
    fetch_rounds(cluster, 2)

    # Broker 3 stops fetching (a long GC pause); broker 2 keeps up.
    for second in range(12):
        cluster.produce(f"b{second}")
        cluster.tick(1_000)
        fetch_rounds(cluster, 2, followers=(2,))
        cluster.check_isr(1)
    proposal = cluster.last_proposal()
    assert proposal.kind is IsrChangeKind.SHRINK and proposal.new_isr == (1, 2)
    assert cluster.clock.monotonic_ms() > REPLICA_LAG_TIME_MAX_MS

    # Until the controller accepts, the HW still waits for broker 3 (maximal ISR).
    stuck_hw = leader.replica.high_watermark
    fetch_rounds(cluster, 1, followers=(2,))
    assert leader.replica.high_watermark == stuck_hw == 1

    cluster.settle_alter_partition()
    assert cluster.controller.isr == (1, 2) and leader.replica.state.isr == (1, 2)
    assert leader.replica.high_watermark == leader.log.log_end_offset, "committed on the smaller ISR"
    acked = cluster.produce("c")
    fetch_rounds(cluster, 2, followers=(2,))
    assert acked.ok

    # Broker 3 wakes up, catches up, and is proposed back.
    fetch_rounds(cluster, 6, followers=(3,))
    proposal = cluster.last_proposal()
    assert proposal.kind is IsrChangeKind.EXPAND and proposal.new_isr == (1, 2, 3)
    cluster.settle_alter_partition()
    assert cluster.controller.isr == (1, 2, 3) and leader.replica.leader.isr == (1, 2, 3)
    cluster.check_invariants()


def test_too_few_in_sync_replicas_refuses_acks_all():
    cluster = started_cluster()
    cluster.kill(2)
    cluster.kill(3)
    cluster.deliver_all()
    assert cluster.controller.isr == (1,) and cluster.controller.leader == 1
    assert cluster.produce("x").error_code is ErrorCode.NOT_ENOUGH_REPLICAS
    assert cluster.produce("y", acks=1).ok


def test_kip101_hw_truncation_followed_by_immediate_leader_election():
    """KIP-101 scenario 1: a restarting follower must not cut its log back to its stale HW."""
    cluster = started_cluster()
    cluster.kill(3)  # two live replicas: leader 1, follower 2
    cluster.deliver_all()
    cluster.produce("m1")
    cluster.produce("m2")
    fetch_rounds(cluster, 1, followers=(2,))  # 2 copies m1, m2
    fetch_rounds(cluster, 1, followers=(2,))  # leader HW -> 2: m1 and m2 are committed
    assert cluster.broker(1).replica.high_watermark == 2

    # Broker 2 restarts quickly (still in the ISR). Its HW checkpoint file is older and says 1.
    # The seed's rule ("truncate to the HW, then catch up") would cut m2 here.
    cluster.bounce(2, checkpoint_hw=1)
    cluster.deliver_all()
    assert cluster.broker(2).replica.high_watermark == 1
    assert cluster.broker(2).log.payloads() == ["m1", "m2"]

    # Before 2 fetches again, the leader dies; 2 is the only live ISR member and is elected.
    cluster.kill(1)
    cluster.deliver_all()
    assert cluster.controller.leader == 2 and cluster.broker(2).role is ReplicaRole.LEADER
    cluster.check_invariants()
    assert cluster.broker(2).log.payloads() == ["m1", "m2"], "m2 was committed and survives"

    # The old leader returns and follows: nothing to truncate, the logs agree.
    cluster.restart(1)
    cluster.deliver_all()
    fetch_rounds(cluster, 3, followers=(1,))
    assert cluster.broker(1).log.payloads() == cluster.broker(2).log.payloads() == ["m1", "m2"]


def test_kip101_replica_divergence_after_multiple_hard_failures():
    """KIP-101 scenario 2: two replicas end up with different records at the same offset."""
    cluster = started_cluster()
    cluster.kill(3)
    cluster.deliver_all()
    first = cluster.produce("m1")
    fetch_rounds(cluster, 2, followers=(2,))
    assert first.ok
    cluster.produce("m2", acks=1)  # on the leader only; broker 2 never copies it

    # Power failure: the leader dies first (2 is elected), then 2 dies as well.
    cluster.kill(1)
    cluster.deliver_all()
    cluster.kill(2)
    cluster.deliver_all()
    assert cluster.controller.leader == -1 and cluster.controller.isr == (2,)

    # Broker 1 returns first but was dropped from the ISR: the partition stays offline (clean only).
    cluster.restart(1)
    cluster.deliver_all()
    assert cluster.broker(1).role is ReplicaRole.OFFLINE

    # Broker 2 returns, is elected, and takes m3 at offset 1 - where broker 1 holds m2.
    cluster.restart(2)
    cluster.deliver_all()
    assert cluster.broker(2).role is ReplicaRole.LEADER and cluster.broker(1).role is ReplicaRole.FOLLOWER
    cluster.produce("m3", acks=1)
    assert cluster.broker(1).log.payloads() == ["m1", "m2"] and cluster.broker(2).log.payloads() == ["m1", "m3"]

    # Broker 1 fetches with its last epoch; the leader answers with a diverging epoch; 1 truncates m2.
    assert cluster.fetch(1) == "truncated to 1"
    fetch_rounds(cluster, 2, followers=(1,))
    assert cluster.broker(1).log.payloads() == cluster.broker(2).log.payloads() == ["m1", "m3"]
    assert cluster.broker(1).log.epochs() == cluster.broker(2).log.epochs()


def test_isolated_leader_cannot_commit_and_truncates_its_tail_after_healing():
    cluster = started_cluster()
    cluster.produce("committed")
    fetch_rounds(cluster, 2)

    # Broker 1 loses its ZooKeeper session but keeps running; the controller elects 2.
    cluster.isolate(1)
    cluster.deliver_all()
    assert cluster.controller.leader == 2 and cluster.broker(2).role is ReplicaRole.LEADER
    assert cluster.broker(1).role is ReplicaRole.LEADER, "the zombie does not know yet"

    # A client with stale metadata still writes to the zombie; it appends but cannot commit.
    zombie_write = cluster.produce("lost", broker_id=1)
    fetch_rounds(cluster, 2)  # followers now fetch from broker 2
    cluster.tick(5_000)
    assert zombie_write.error_code is ErrorCode.REQUEST_TIMED_OUT
    assert cluster.broker(1).replica.high_watermark == 1

    # Its ISR shrink is refused: the controller no longer counts it.
    cluster.tick(REPLICA_LAG_TIME_MAX_MS)
    cluster.check_isr(1)
    cluster.settle_alter_partition()
    assert cluster.broker(1).replica.leader.isr == (1, 2, 3)

    # New writes go to broker 2 and commit there.
    fresh = cluster.produce("fresh")
    fetch_rounds(cluster, 2, followers=(3,))
    assert fresh.ok

    # Healing: broker 1 becomes a follower, finds the divergence and drops "lost".
    cluster.heal(1)
    cluster.deliver_all()
    assert cluster.broker(1).role is ReplicaRole.FOLLOWER
    fetch_rounds(cluster, 4, followers=(1,))
    assert cluster.broker(1).log.payloads() == cluster.broker(2).log.payloads() == ["committed", "fresh"]
    cluster.check_invariants()


def test_idempotent_retry_after_leader_failover_is_not_duplicated():
    cluster = started_cluster()
    first = cluster.produce("p0", producer_id=7, sequence=0)
    fetch_rounds(cluster, 2)
    assert first.ok
    second = cluster.produce("p1", producer_id=7, sequence=1)
    fetch_rounds(cluster, 1)  # replicated everywhere, but the leader dies before it acknowledges
    assert not second.done
    cluster.kill(1)
    assert second.error_code is ErrorCode.REQUEST_TIMED_OUT
    cluster.deliver_all()

    # The producer retries sequence 1 against the new leader, which rebuilt its state from its log.
    retry = cluster.produce("p1", producer_id=7, sequence=1)
    assert retry.base_offset == 1, "answered with the original offset, not appended again"
    fetch_rounds(cluster, 2, followers=(3,))
    assert retry.ok
    assert cluster.leader().log.payloads() == ["p0", "p1"]
    skipped = cluster.produce("p3", producer_id=7, sequence=3)
    assert skipped.error_code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
