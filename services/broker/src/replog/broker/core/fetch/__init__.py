"""What a reader may be given, and where a follower's log parts from its leader's.

- fetch.py             consumer fetch bounds, long-poll completion
- follower_fetch.py    a follower's fetch at the leader: the position check and the read it allows
- divergence.py        the leader's half of safe truncation: a follower whose log diverged
- truncation.py        the follower's half: where to cut its log to the last common epoch

Pure, like the rest of the core (tests/unit/test_core_purity.py).
"""
