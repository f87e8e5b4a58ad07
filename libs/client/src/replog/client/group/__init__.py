"""Consumer groups on the client side: assignors now; membership, commits and heartbeats to come (issue 43)."""
