"""What changes hosted logs off the data path, on a timer or an operator's word: durability, retention, compaction, scrubbing.

- checkpointer.py       the periodic fsync of rolled segments, interval flushes, checkpoint files, and its chores
                        (retention rounds among them)
- retention_rounds.py   retention over every hosted replica, a bounded slice per checkpointer round
- log_maintenance.py    steps beside the data path: retention, DeleteRecords, a topic's new log settings
- log_cleaner.py        the log cleaner thread: the dirtiest compacted replica, one throttled pass at a time
- scrubber.py           verifies rolled segments at a bounded rate; a follower refetches a damaged one
- producer_expiry.py    forgets idle producers where room is needed; reports new producers a full table refused
"""
