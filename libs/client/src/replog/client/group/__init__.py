"""Consumer groups on the client side: assignors (assignors.py), membership, commits and heartbeats
(membership.py), and what a Consumer in a group does with them (coordination.py)."""
