"""The broker's side of the control plane: the controller's requests, ZooKeeper, ISR proposals.

- state_changes.py        LeaderAndIsr / StopReplica applied: core decisions, effects, become_* spans
- isr_changes.py          the periodic ISR shrink check, AlterPartition sending and its answers
- controller_link.py      the active controller's address from /controller, and its RPCs
- controlled_shutdown.py  ControlledShutdown before stopping
- offline_dirs.py         a failed log directory: halt if it was the last, else record it and tell the controller
- resignations.py         a leader whose scrubber found a damaged segment asks for another leader
- registration.py         the ephemeral /brokers/ids/<id> (broker epoch = czxid)
- topic_configs.py        every topic config from /config/topics (DataWatch): min.insync.replicas, and the
                          log settings handed to running logs
"""
