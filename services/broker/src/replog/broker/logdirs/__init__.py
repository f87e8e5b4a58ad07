"""Where replicas live on disk, and what becomes of a log directory that fails, fills or stalls.

- log_dirs.py           the broker's log directories: placement of new replicas, per-directory checkpoints
- partition_dirs.py     <log dir>/<topic>-<partition> naming, and set-aside names of deleted replicas
- directory_load.py     one log directory at start: its logs opened and recovered, or the directory offline
- recovery_losses.py    what start-up recovery could not find: a metric, a log line, a span
- log_dir_failures.py   a storage error takes the log directory offline: nothing retried, appended or served
- log_dir_space.py      the free-space reserve below which a leader refuses produce
- fsync_probe.py        a stalled fsync is a storage error: a probe with a deadline
- directory_remover.py  removes deleted replicas' directories on a thread of its own
"""
