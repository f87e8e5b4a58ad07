"""Replication between brokers: the follower's fetchers and the leader's fetch sessions.

- fetcher.py               ReplicaFetcher: one thread per leader followed, pulling in a fetch session
- follower_answers.py      what a follower does with one partition's answer: append, truncate, reset, back off
- fetch_messages.py        the fetcher's ReplicaFetch request and the leader's answer, protobuf <-> domain
- fetcher_manager.py       which fetcher carries which partition (num_replica_fetchers per leader)
- fetch_stream.py          the fetcher's ReplicaFetchStream to its leader, with a deadline watchdog
- fetch_sessions.py        the leader's session per follower fetcher: read only what moved or signalled
- replication_throttle.py  the reassignment throttle: replicas being added are fed at its rate
"""
