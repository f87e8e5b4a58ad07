"""The broker's pure replica core: decisions as values, no I/O, no clock, no threads.

Map (one job per module; each opens with its theory of operation). `TopicPartition` and
`NO_LEADER` are the shared domain's (replog.common.core.partitions).
- errors.py            ErrorCode (mirror of replog.v1.ErrorCode) and Refusal
- log_view.py          LogView protocol the core reads; EpochEndOffset
- fencing.py           leader-epoch fencing of requests
- partition.py         PartitionState, role transition table, LeaderAndIsr / StopReplica decisions and effects
- replica.py           PartitionReplica: one replica's state, changed in one place
- leader.py            LeaderReplica: follower progress, HW, ISR proposals
- follower_fetch.py    a follower's fetch at the leader: the position check and the read it allows
- high_watermark.py    HW as pure functions (candidate + epoch rule)
- follower_progress.py caught-up, out-of-sync and rejoin rules
- isr_proposal.py      AlterPartition proposals, maximal ISR, ineligible followers' back-off
- isr_answer.py        what an AlterPartition answer proves, and the leader's outcomes
- divergence.py        leader-side divergent-follower detection
- effects.py           what a step changed for waiting requests, and whom that wakes
- step_log.py          what a partition step needs of its partition: the log protocol, producer headers
- leader_steps.py      the leader's steps in order: a producer's append, the answer to a follower's fetch
- follower_steps.py    the follower's steps in order: append the leader's batches, the truncations
- follower.py          follower fetch position and HW
- truncation.py        follower truncation to the last common epoch
- produce.py           produce admission, delayed produce completion
- producer_state.py    idempotent producer sequences (KIP-98)
- purgatory.py         delayed operations keyed by partition
- fetch.py             consumer fetch bounds, long-poll completion

Imports nothing from grpc, kazoo, pyspark, socket, subprocess, threading, os,
time or random (a unit test checks). Time comes in as `now_ms` numbers.
"""
