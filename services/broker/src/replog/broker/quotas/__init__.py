"""Client quotas on the broker: each user's produce and fetch bytes per second, measured here and held to
the quotas ZooKeeper holds (replog.common.quotas; docs/quotas.md).

- core/rate.py        the sampled rate over a sliding window, and the throttle time past a quota (pure)
- core/throttle.py    one user's quota of one type: admit or refuse a request, the throttle to answer (pure)
- client_quotas.py    every user's throttles, the current quotas (kept by a QuotaWatcher), the metrics
- edge.py             LogService's calls into it: Produce and ProduceStream through the caller's produce
                      quota, Fetch through its fetch quota
- settings.py         the window's configuration keys

Services (controllers, brokers, gateways) are never measured, and replication does not go through
LogService. With no quota in ZooKeeper a request costs one look at an empty snapshot.
"""
