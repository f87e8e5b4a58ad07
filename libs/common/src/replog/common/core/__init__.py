"""The shared domain: pure values and rules more than one service decides with.

- partitions.py     `TopicPartition` and `NO_LEADER`
- names.py          Kafka's topic-name rule, which every service checks a request's topic names against
- topic_config.py   a topic's configs: parsing, validation, defaults (`/config/topics/<topic>`)
- placement.py      replica placement, Kafka's assignReplicasToBrokers, and explicit-assignment checks
- errors.py         the typed errors of requests a caller can fix, each naming its ErrorCode

Pure like every `core` package (tests/unit/test_core_purity.py): no gRPC, ZooKeeper or sockets.
"""
