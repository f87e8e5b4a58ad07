"""The broker's adapters: gRPC servicers, fetcher threads, ZooKeeper, files around the pure core.

Map (one job per module; bootstrap.py wires them, nothing is built at import time):

Replicas and their lock
- hosted_partition.py   HostedPartition: one replica's log, core, producer table, long-poll waiters, one lock
- leader_side.py        leader steps: append a produce, serve a follower / consumer, list offsets, ISR answers
- follower_side.py      follower steps: fetch position, append the leader's batches, truncate
- producer_headers.py   producer state from batch headers (record, rebuild from the log)
- replica_manager.py    the hosted replicas: start-up load and recovery, lookups, HW / recovery-point checkpoints
- partition_dirs.py     <log_dir>/<topic>-<partition> naming
- assignments.py        start-up deletion of replicas no longer assigned here (seed v3 §E)
- checkpointer.py       periodic flush-if-due and checkpoint files

Controller requests
- control_servicer.py   BrokerControlService: controller / broker epoch fencing, proto <-> decisions
- state_changes.py      LeaderAndIsr / StopReplica applied: core decisions, effects, become_* spans;
                        the replica digest a new controller confirms instead of an INIT
- metadata_cache.py     UpdateMetadata -> Metadata answers, broker addresses, the metadata digest

Replication
- replication_servicer.py  ReplicationService: ReplicaFetch long-poll, OffsetForLeaderEpoch
- fetch_sessions.py     the leader's fetch session per follower: read only what moved or signalled
- replication_throttle.py  the reassignment throttle: replicas being added are fed at its rate
- fetcher.py / fetcher_manager.py  one fetcher thread per leader broker, in a fetch session
- long_poll.py          event-driven long polls (no polling loop); the Waiter

ISR and the controller
- isr_changes.py        periodic shrink check, AlterPartition sending and answers
- controller_link.py    the active controller's address from /controller, its RPCs
- controlled_shutdown.py  ControlledShutdown before stopping

Clients
- log_servicer.py       LogService: Fetch, ListOffsets, Metadata, InitProducerId, DescribeReplicas
- produce_handler.py    Produce: validation, append, acks
- delayed_produces.py   acks=-1 waits: the core purgatory behind one lock
- wait_slots.py         the bound on client waits that hold a handler thread
- topic_configs.py      min.insync.replicas from /config/topics (DataWatch)
- producer_ids.py       producer id blocks in /latest_producer_id_block

Process
- registration.py       the ephemeral /brokers/ids/<id> (broker epoch = czxid)
- servicers.py          gRPC service bindings
- metrics.py            replog_broker_* Prometheus metrics
- thread_guard.py       what a background thread does with an unexpected exception
"""
