"""The broker's pure replica core: decisions as values, no I/O, no clock, no threads.

Map (one job per module; each opens with its theory of operation). `TopicPartition` and
`NO_LEADER` are the shared domain's (replog.common.core.partitions).
- errors.py            ErrorCode (mirror of replog.v1.ErrorCode) and Refusal
- log_view.py          LogView protocol the core reads; EpochEndOffset
- fencing.py           leader-epoch fencing of requests
- controller_epoch.py  which controller epochs the broker obeys
- partition.py         PartitionState, role transition table, LeaderAndIsr / StopReplica decisions and effects
- replica.py           PartitionReplica: one replica's state, changed in one place
- leader.py            LeaderReplica: follower progress, HW, ISR proposals
- follower.py          follower fetch position and HW
- effects.py           what a step changed for waiting requests, and whom that wakes
- step_log.py          what a partition step needs of its partition: the log protocol, producer headers
- leader_steps.py      the leader's steps in order: a producer's append, the answer to a follower's fetch
- follower_steps.py    the follower's steps in order: append the leader's batches, the truncations
- delete_records.py    DeleteRecords on a leader: where its log start may move
- isr/                 who is in sync and what is committed: follower progress, HW, ISR proposals and answers
- fetch/               what a reader may be given: consumer and follower fetches, divergence, truncation
- produce/             whether a write is taken: admission, idempotent producers, the purgatory

Imports nothing from grpc, kazoo, pyspark, socket, subprocess, threading, os,
time or random (a unit test checks). Time comes in as `now_ms` numbers.
"""
