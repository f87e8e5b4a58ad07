"""The broker's gRPC edge: each servicer converts protobuf to domain values, calls in, converts back.

- servicers.py             the gRPC service bindings for the shared server
- control_servicer.py      BrokerControlService: controller and broker epoch fencing, LeaderAndIsr, StopReplica,
                           UpdateMetadata
- replication_servicer.py  ReplicationService: ReplicaFetch(Stream) in fetch sessions, OffsetForLeaderEpoch
- log_servicer.py          LogService: Produce, Fetch, ListOffsets, Metadata, InitProducerId, DescribeReplicas
- produce_edge.py          Produce requests and answers between protobuf and the produce path's domain values
- metadata_cache.py        the Metadata answers, kept as the wire messages UpdateMetadata delivers (and broker
                           addresses, the metadata digest): protobuf in, protobuf out, so it lives at the edge
- produce_stream.py        one ProduceStream: a reader thread appends in order, the handler thread answers
"""
