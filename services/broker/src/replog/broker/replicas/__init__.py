"""The replicas this broker hosts: one lock per partition, the steps taken under it, and their files.

- hosted_partition.py   HostedPartition: one replica's log, core, producer table and long-poll waiters; `run`,
                        the one place its lock is taken, runs a step and hands its effects on
- consequences.py       acts on a step's effects: wakes long polls, completes delayed produces, submits ISR proposals
- leader_side.py        leader steps: append a produce, serve a follower or a consumer, list offsets, ISR answers
                        (the append's and the follower read's order is core/leader_steps.py's)
- follower_side.py      follower steps: fetch position, append the leader's batches, truncate (in the order of
                        core/follower_steps.py)
- log_maintenance.py    steps beside the data path: retention, DeleteRecords, a topic's new log settings
- retention_rounds.py   retention over every hosted replica, a bounded slice per checkpointer round
- log_cleaner.py        the log cleaner thread: the dirtiest compacted replica, one throttled pass at a time
- describe.py           what DescribeReplicas reports of a replica, read in one step
- long_poll.py          the Waiter parked on partitions, and the consumers' event-driven long poll
- producer_headers.py   idempotent producer state from batch headers (record, rebuild from the log; for core steps)
- replica_manager.py    the hosted replicas: start-up load and recovery, lookups, HW / recovery-point /
                        log-start checkpoints
- partition_dirs.py     <log dir>/<topic>-<partition> naming, and set-aside names of deleted replicas
- scrubber.py           verifies rolled segments at a bounded rate; a follower refetches a damaged one
- log_dir_space.py      the free-space reserve below which a leader refuses produce
- fsync_probe.py        a stalled fsync is a storage error: a probe with a deadline
- log_dir_failures.py   a storage error takes the log directory offline: nothing retried, appended or served
- log_dirs.py           the broker's log directories: placement of new replicas, per-directory checkpoints
- directory_load.py     one log directory at start: its logs opened and recovered, or the directory offline
- directory_remover.py  removes deleted replicas' directories on a thread of its own
- assignments.py        start-up deletion of replicas no longer assigned here
- checkpointer.py       the periodic fsync of rolled segments, interval flushes, checkpoint files, and its chores
                        (retention rounds among them)
"""
