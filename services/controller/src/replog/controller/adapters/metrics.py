"""The controller's Prometheus metrics (docs/metrics.md), named as Kafka's."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

ACTIVE_CONTROLLER_COUNT = Gauge("replog_controller_active_controller_count", "1 when this controller holds the seat")
OFFLINE_PARTITIONS = Gauge("replog_controller_offline_partitions_count", "partitions without a live leader")
GLOBAL_PARTITIONS = Gauge("replog_controller_global_partition_count", "partitions in the cluster")
EVENT_QUEUE_SIZE = Gauge("replog_controller_event_queue_size", "events waiting for the controller loop")
EVENT_QUEUE_TIME = Histogram("replog_controller_event_queue_time_ms", "time events wait in the queue",
                             buckets=(1, 5, 10, 50, 100, 500, 1000, 5000, 10000))
EVENT_PROCESSING_TIME = Histogram("replog_controller_event_processing_time_ms", "time to decide and execute an event",
                                  ["event"], buckets=(1, 5, 10, 50, 100, 500, 1000, 5000, 10000))
LEADER_ELECTIONS = Counter("replog_controller_leader_elections_total", "leader elections (LeaderElectionRate)")
LEADER_ELECTION_TIME = Histogram("replog_controller_leader_election_time_ms", "time of events that elected leaders",
                                 buckets=(1, 5, 10, 50, 100, 500, 1000, 5000, 10000))
UNCLEAN_LEADER_ELECTIONS = Counter("replog_controller_unclean_leader_elections_total",
                                   "unclean leader elections (possible data loss)")
LOSSY_LEADER_ELECTIONS = Counter("replog_controller_lossy_leader_elections_total",
                                 "leaders elected from an ISR whose every live member lost committed records in an "
                                 "unclean shutdown (those records are gone)")
ISR_SHRINKS = Counter("replog_controller_isr_shrinks_total", "ISR shrinks committed")
ISR_EXPANDS = Counter("replog_controller_isr_expands_total", "ISR expansions committed")
FAILED_ISR_UPDATES = Counter("replog_controller_failed_isr_updates_total", "AlterPartition proposals refused")
