"""Transport security: mutual TLS between every process, identities, and who may call what.

- principal.py       `Principal` and `peer_principal(context)`: the caller's identity, from its certificate
- rules.py           the method table (pure): who may call each method, what it speaks for, what a user needs
- acl_needs.py       what a user needs from the ACLs for a request, and what an answer may show it
- authorization.py   the server interceptor applying the table, refusing and logging once
- files.py           the three PEM files of a process, and noticing when they change
- credentials.py     gRPC server and channel credentials that follow the files (reload without restart)
- certificates.py    a throwaway CA and per-process certificates (local clusters and tests)
- settings.py        the TLS config keys every service shares, checked at start
- local.py           where a local cluster keeps its certificates; how clients find theirs

docs/security.md tells the whole story.
"""
