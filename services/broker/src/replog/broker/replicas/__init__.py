"""The replicas this broker hosts: one lock per partition, and the steps taken under it.

Log directories and their failures are logdirs/; the chores that change hosted logs off the
data path (checkpoints, retention, compaction, scrubbing) are maintenance/.

- hosted_partition.py   HostedPartition: one replica's log, core, producer table and long-poll waiters; `run`,
                        the one place its lock is taken, runs a step and hands its effects on
- consequences.py       acts on a step's effects: wakes long polls, completes delayed produces, submits ISR proposals
- leader_side.py        leader steps: append a produce, serve a follower or a consumer, list offsets, ISR answers
                        (the append's and the follower read's order is core/leader_steps.py's)
- follower_side.py      follower steps: fetch position, append the leader's batches, truncate (in the order of
                        core/follower_steps.py)
- describe.py           what DescribeReplicas reports of a replica, read in one step
- long_poll.py          the Waiter parked on partitions, and the consumers' event-driven long poll
- producer_headers.py   idempotent producer state from batch headers (record, rebuild from the log; for core steps)
- replica_manager.py    the hosted replicas: start-up load and recovery, lookups, HW / recovery-point /
                        log-start checkpoints
- assignments.py        start-up deletion of replicas no longer assigned here
"""
