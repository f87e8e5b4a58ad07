"""The fault matrix's parts (issue 39): a workload that records what its clients saw (history.py,
workload.py), a checker of that history against the final logs (checker.py, pure), the faults and
their targets (faults.py, session_expiry.py) and the runner of one cell (cells.py); compacted.py
records keyed writes to a compacted topic for the checker's compaction-aware mode. docs/testing.md
tells the whole story."""
