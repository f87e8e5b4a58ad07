"""The leader's steps on one hosted partition: append, serve followers and consumers, ISR.

Each public function runs one step under the partition's lock (`HostedPartition.run`)
and returns its answer with the effects the core reported (an append, a HW that
advanced, an ISR proposal), which `run` acts on once the lock is released
(consequences.py). The order inside an append and inside the answer to a follower's
fetch is the core's alone (core/leader_steps.py); here only what the core does not
know of: whether the replica is still hosted, its log directory's health and free
space, and the storage errors the log raises, mapped to answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from replog.broker.core.effects import NO_EFFECTS
from replog.broker.core.errors import ErrorCode, Refusal
from replog.broker.core.fencing import check_leader_epoch
from replog.broker.core.isr.isr_answer import AlterPartitionOutcome, AnswerIgnored
from replog.broker.core.isr.isr_proposal import AlterPartitionAnswer, AlterPartitionProposal
from replog.broker.core.log_view import EpochEndOffset
from replog.broker.core.leader_steps import FollowerFetchAnswer, LeaderAppend, answer_follower_fetch
from replog.broker.core.leader_steps import append_as_leader as core_append_as_leader
from replog.broker.core.produce.produce import ProduceProgress
from replog.broker.log import CorruptLogError
from replog.broker.logdirs.log_dir_failures import LogDirFailures
from replog.broker.replicas.hosted_partition import HostedPartition
from replog.common.core.partitions import TopicPartition
from replog.common.records import BatchHeader, RecordTooLargeError

logger = logging.getLogger(__name__)
_GONE = (ErrorCode.NOT_LEADER, "the replica is no longer hosted here")


def append_produced(
    hosted: HostedPartition, *, acks: int, min_insync_replicas: int, batch: bytes, header: BatchHeader, fsync: bool,
    now_ms: int, deferred: list | None = None,
) -> LeaderAppend:
    """Append one validated producer batch (or answer a retried one with its original offsets).

    `deferred` (see `HostedPartition.run`) leaves acting on the append's effects to the caller,
    which appends every partition of a request first: a follower woken by the first append would
    otherwise come back for each of the others, one round trip per partition.
    """
    return hosted.run(_append_produced, acks, min_insync_replicas, batch, header, fsync, now_ms, deferred=deferred)


def _append_produced(hosted: HostedPartition, acks: int, min_insync_replicas: int, batch: bytes, header: BatchHeader,
                     fsync: bool, now_ms: int):
    if not hosted.usable:
        return LeaderAppend(*_GONE), NO_EFFECTS
    if hosted.dir_failures.offline:
        return LeaderAppend(ErrorCode.STORAGE_ERROR, _offline_message(hosted)), NO_EFFECTS
    shortage = hosted.dir_space.shortage()
    if shortage is not None:
        return LeaderAppend(ErrorCode.STORAGE_ERROR, shortage), NO_EFFECTS
    try:
        return core_append_as_leader(hosted, acks=acks, min_insync_replicas=min_insync_replicas, batch=batch,
                                     header=header, fsync=fsync, now_ms=now_ms)
    except OSError as exc:
        return storage_failure_answer(hosted.dir_failures, hosted.topic_partition, exc), NO_EFFECTS
    except RecordTooLargeError as exc:  # the topic's max.message.bytes went down since the batch was checked
        return LeaderAppend(ErrorCode.RECORD_TOO_LARGE, str(exc)), NO_EFFECTS


def storage_failure_answer(dir_failures: LogDirFailures, topic_partition: TopicPartition,
                           exc: OSError) -> LeaderAppend:
    """The answer to a produce whose append the log refused with `exc` (a failed write or fsync).

    Nothing is retried: the directory goes offline, unless the process only ran out of descriptors
    (logdirs/log_dir_failures.py decides, and tells the broker, which halts when it was its last
    directory: control/offline_dirs.py); the producer is told STORAGE_ERROR, never that its batch is
    written. The replication simulation's disks answer through this too (tests/scenario/broker)."""
    dir_failures.failed(f"an append to {topic_partition}", exc)
    return LeaderAppend(ErrorCode.STORAGE_ERROR, dir_failures.storage_error_message(exc))


def _offline_message(hosted: HostedPartition) -> str:
    return (f"the log directory {hosted.dir_failures.log_dir} is offline after a storage error "
            f"({hosted.dir_failures.offline_reason}); another replica takes over")


def produce_progress(hosted: HostedPartition) -> ProduceProgress | None:
    """What a delayed produce reads to decide its wait; None once the replica is gone."""
    return hosted.run(_produce_progress)


def _produce_progress(hosted: HostedPartition):
    return (hosted.replica.produce_progress() if hosted.usable else None), NO_EFFECTS


def read_for_follower(
    hosted: HostedPartition,
    *,
    replica_id: int,
    current_leader_epoch: int,
    fetch_offset: int,
    last_fetched_epoch: int,
    replica_broker_epoch: int,
    bytes_max: int,
    now_ms: int,
) -> FollowerFetchAnswer:
    """One partition of a ReplicaFetch: record the follower's position, send what follows it.

    A HW this fetch advances completes delayed produces and wakes the consumers' long polls (the
    followers' fetch sessions are only told); an ISR expansion it proposes goes to the ISR sender."""
    return hosted.run(_read_for_follower, replica_id, current_leader_epoch, fetch_offset, last_fetched_epoch,
                      replica_broker_epoch, bytes_max, now_ms)


def _read_for_follower(hosted: HostedPartition, replica_id: int, current_leader_epoch: int, fetch_offset: int,
                       last_fetched_epoch: int, replica_broker_epoch: int, bytes_max: int, now_ms: int):
    replica, log = hosted.replica, hosted.log
    if not hosted.usable:
        return FollowerFetchAnswer(*_GONE, -1, -1, -1, -1), NO_EFFECTS
    if hosted.dir_failures.offline:  # its log end may count a batch the disk refused
        return FollowerFetchAnswer(ErrorCode.STORAGE_ERROR, _offline_message(hosted), -1, -1, -1, -1), NO_EFFECTS
    try:
        return answer_follower_fetch(replica, log, replica_id=replica_id, current_leader_epoch=current_leader_epoch,
                                     fetch_offset=fetch_offset, last_fetched_epoch=last_fetched_epoch,
                                     replica_broker_epoch=replica_broker_epoch, bytes_max=bytes_max, now_ms=now_ms)
    except CorruptLogError as exc:  # never handed on; the follower backs off and asks again
        logger.error("%s: %s", hosted.topic_partition, exc)
        return FollowerFetchAnswer(ErrorCode.STORAGE_ERROR, str(exc), replica.high_watermark,
                                   log.log_start_offset, log.log_end_offset, replica.state.leader_epoch), NO_EFFECTS


def offset_for_leader_epoch(
    hosted: HostedPartition, *, current_leader_epoch: int, requested_leader_epoch: int
) -> EpochEndOffset | Refusal:
    return hosted.run(_offset_for_leader_epoch, current_leader_epoch, requested_leader_epoch)


def _offset_for_leader_epoch(hosted: HostedPartition, current_leader_epoch: int, requested_leader_epoch: int):
    if not hosted.usable:
        return Refusal(*_GONE), NO_EFFECTS
    return hosted.replica.offset_for_leader_epoch(
        current_leader_epoch=current_leader_epoch, requested_leader_epoch=requested_leader_epoch, log=hosted.log
    ), NO_EFFECTS


@dataclass(frozen=True)
class ConsumerFetchAnswer:
    error_code: ErrorCode
    message: str = ""
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""


def read_for_consumer(
    hosted: HostedPartition, *, current_leader_epoch: int, fetch_offset: int, bytes_max: int
) -> ConsumerFetchAnswer:
    """Committed records (below the HW) from `fetch_offset`, whole batches."""
    return hosted.run(_read_for_consumer, current_leader_epoch, fetch_offset, bytes_max)


def _read_for_consumer(hosted: HostedPartition, current_leader_epoch: int, fetch_offset: int, bytes_max: int):
    if not hosted.usable:
        return ConsumerFetchAnswer(*_GONE), NO_EFFECTS
    plan = hosted.replica.plan_consumer_fetch(
        current_leader_epoch=current_leader_epoch, fetch_offset=fetch_offset, log=hosted.log
    )
    if isinstance(plan, Refusal):
        return ConsumerFetchAnswer(plan.code, plan.reason, hosted.replica.high_watermark,
                                   hosted.log.log_start_offset), NO_EFFECTS
    records = b""
    if not plan.is_empty:
        try:
            records = hosted.log.read(plan.fetch_offset, bytes_max, upper_offset=plan.read_upto_offset)
        except CorruptLogError as exc:  # a consumer gets an error, never records whose CRC fails
            logger.error("%s: %s", hosted.topic_partition, exc)
            return ConsumerFetchAnswer(ErrorCode.STORAGE_ERROR, str(exc), plan.high_watermark,
                                       plan.log_start_offset), NO_EFFECTS
    return ConsumerFetchAnswer(ErrorCode.NONE, "", plan.high_watermark, plan.log_start_offset, records), NO_EFFECTS


@dataclass(frozen=True)
class OffsetLookup:
    error_code: ErrorCode
    message: str = ""
    offset: int = -1
    timestamp_ms: int = -1
    leader_epoch: int = -1


def list_offset(
    hosted: HostedPartition, *, spec: str, timestamp_ms: int, current_leader_epoch: int
) -> OffsetLookup:
    """ListOffsets for one partition; `spec` is "earliest", "latest" or "timestamp"."""
    return hosted.run(_list_offset, spec, timestamp_ms, current_leader_epoch)


def _list_offset(hosted: HostedPartition, spec: str, timestamp_ms: int, current_leader_epoch: int):
    return _lookup_offset(hosted, spec, timestamp_ms, current_leader_epoch), NO_EFFECTS


def _lookup_offset(hosted: HostedPartition, spec: str, timestamp_ms: int, current_leader_epoch: int) -> OffsetLookup:
    if not hosted.usable:
        return OffsetLookup(*_GONE)
    replica, log = hosted.replica, hosted.log
    leader = replica.leader
    leader_epoch = replica.state.leader_epoch
    if leader is None:
        return OffsetLookup(ErrorCode.NOT_LEADER, "this broker does not lead the partition")
    fenced = check_leader_epoch(current_leader_epoch, leader_epoch, unset_allowed=True)
    if fenced is not None:
        return OffsetLookup(fenced.code, fenced.reason)
    if spec == "earliest":
        return OffsetLookup(ErrorCode.NONE, "", log.log_start_offset, -1, leader_epoch)
    if not leader.high_watermark_settled:
        # A new leader's inherited HW may be below its predecessor's (KIP-207): never show it.
        return OffsetLookup(ErrorCode.LEADER_NOT_AVAILABLE, "the new leader's high watermark is not settled yet")
    if spec == "latest":
        return OffsetLookup(ErrorCode.NONE, "", leader.high_watermark, -1, leader_epoch)
    found = log.offset_for_timestamp(timestamp_ms)
    if found is None or found[0] >= leader.high_watermark:
        return OffsetLookup(ErrorCode.NONE, "", -1, -1, leader_epoch)
    return OffsetLookup(ErrorCode.NONE, "", found[0], found[1], leader_epoch)


# --- ISR changes ---------------------------------------------------------------------


def isr_check(hosted: HostedPartition, *, now_ms: int,
              replica_lag_time_max_ms: int) -> tuple[AlterPartitionProposal | None, AlterPartitionProposal | None]:
    """The periodic ISR check of a led partition: (a new shrink proposal, the proposal to send), each
    None when there is none. A proposal made earlier and not answered yet is sent again."""
    return hosted.run(_isr_check, now_ms, replica_lag_time_max_ms)


def _isr_check(hosted: HostedPartition, now_ms: int, replica_lag_time_max_ms: int):
    leader = hosted.replica.leader if hosted.usable else None
    if leader is None:
        return (None, None), NO_EFFECTS
    shrink = leader.maybe_shrink_isr(now_ms=now_ms, replica_lag_time_max_ms=replica_lag_time_max_ms, log=hosted.log)
    return (shrink, leader.proposal_to_resend), NO_EFFECTS


def proposal_to_resend(hosted: HostedPartition) -> AlterPartitionProposal | None:
    return hosted.run(_proposal_to_resend)


def _proposal_to_resend(hosted: HostedPartition):
    leader = hosted.replica.leader if hosted.usable else None
    return (None if leader is None else leader.proposal_to_resend), NO_EFFECTS


def apply_alter_partition_answer(
    hosted: HostedPartition, proposal: AlterPartitionProposal, answer: AlterPartitionAnswer
) -> AlterPartitionOutcome:
    """The controller's answer to `proposal`: a committed ISR or a settled proposal may move the HW,
    and with no proposal pending a follower may be proposed again, so its effects wake every long
    poll (fetch sessions read the partition again even if it is idle)."""
    return hosted.run(_apply_alter_partition_answer, proposal, answer)


def _apply_alter_partition_answer(hosted: HostedPartition, proposal: AlterPartitionProposal,
                                  answer: AlterPartitionAnswer):
    if not hosted.usable:
        return AnswerIgnored("replica no longer hosted"), NO_EFFECTS
    outcome = hosted.replica.on_alter_partition_answer(proposal, answer, log=hosted.log)
    return outcome, outcome.effects
