"""What every replog server checks at its gRPC edge, after authorization and before a handler runs.

- validation.py     bounds on every string and repeated field of every request; Kafka's rule on topic names
- admission.py      how many calls each identity may hold open at once (per identity, and users together)
- idle_streams.py   ending request streams whose caller sent nothing for too long
- guard.py          the server interceptor applying the three
- settings.py       their configuration keys, shared by every service

docs/security.md tells the threat model they belong to.
"""
