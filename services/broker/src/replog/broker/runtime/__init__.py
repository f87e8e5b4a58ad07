"""What the broker's threads share: who runs, how many may wait, what they count, how they fail.

- turn.py          the process's turn: one thread at a time runs a loop with a system call per partition
- wait_slots.py    the bound on client waits that hold a gRPC handler thread
- metrics.py       replog_broker_* Prometheus metrics
- halt.py          stopping at once when the only log directory went offline
- thread_guard.py  what a background thread does with an unexpected exception
"""
