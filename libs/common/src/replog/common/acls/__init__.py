"""Access control lists: which users may produce, consume, describe, create, alter or delete which
topics, and administer the cluster (Kafka's ACL authorizer, in replog's words).

- core/model.py       `AclBinding`, `AclFilter`, the operations and resource patterns, and the rules
                      a binding must follow (pure)
- core/authorizer.py  `Authorizer.authorize(principal, operation, resource_type, name)`: deny wins,
                      an allow is needed, super users may do anything; cached per question (pure)
- store.py            reads the bindings from ZooKeeper (zk/schema/acl_bindings.py) and keeps an Authorizer
                      current by a watch: a change applies within moments, without a restart
- enforcement.py      the gRPC edge: who is calling (from the TLS layer), PERMISSION_DENIED, log once
- settings.py         the `super_users` key brokers and gateways share

The gateway writes bindings (AdminService CreateAcls, DeleteAcls; `replog acls`); brokers check
the clients' Produce, Fetch, ListOffsets, Metadata and InitProducerId, and the gateway its own
admin requests. docs/acls.md tells the whole story.
"""
