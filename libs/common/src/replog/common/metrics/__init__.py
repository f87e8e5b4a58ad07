"""Prometheus metrics every service shares.

- table.py    the one table of every metric replog exports: names, types, help, labels, and the
              naming conventions they keep (docs/metrics.md and the Grafana dashboard are drawn from it)
- process.py  what every process exports besides its own: its `_info`, its ZooKeeper session, its
              certificates' expiry
"""
