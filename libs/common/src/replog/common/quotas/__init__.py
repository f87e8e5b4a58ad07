"""Client quotas: how many bytes per second a user may produce to and fetch from each broker (Kafka's
client quotas per user, in replog's words).

- core/model.py  the quota types, the rules a quota must follow, and `QuotaSnapshot`: which rate
                 applies to a principal (its own, else the default's) (pure)
- store.py       reads the quotas from ZooKeeper (zk/schema/client_quotas.py) and keeps a snapshot
                 current by a watch: a change applies within moments, without a restart

The gateway writes quotas (AdminService AlterClientQuotas; `replog quotas`); brokers measure each
user's bytes and throttle it (replog.broker.quotas). docs/quotas.md tells the whole story.
"""
