"""The gateway's pure core: every admin decision, no I/O.

Theory of operation
-------------------
The gateway is stateless. For each request an adapter reads a snapshot of the
cluster from ZooKeeper (:class:`model.ClusterView`), hands it with the request's
domain values to a function here, and gets back either a decision (what to write,
what to answer) or a :class:`refusal.Refusal` naming the bad value. The adapter
then performs the decided writes with version checks, so a decision taken on a
snapshot that changed underneath is refused by ZooKeeper, never half-applied.

The snapshot (``model``), topic names, health, refusals and the topic decisions
(create, grow, configure, delete) are ``replog.common.topic_admin.core``'s, shared
with the brokers' Kafka listener. Here: ``reassignments`` (plans, merge,
progress), ``elections`` (pre-checks and outcomes), ``acls``, ``quotas``,
``records``, ``config_entries``. Placement and config parsing are not re-implemented:
they come from ``replog.common.core``, the shared domain the controller uses too.

Like every ``core`` package, nothing here imports grpc, kazoo, sockets or files
(tests/unit/test_core_purity.py enforces it); time and randomness come in as
arguments.
"""
