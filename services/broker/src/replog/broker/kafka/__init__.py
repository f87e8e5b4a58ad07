"""A Kafka wire-protocol listener on the broker (docs/kafka-compatibility.md).

Kafka clients (librdkafka and its bindings, the Java client, kafka-python, kcat) speak to the broker
on its `kafka_port` as they would to a Kafka broker. The package is the protocol's edge only: every
request ends in the broker's own servicers and cores, so a Kafka produce takes the gRPC produce path,
and a CreateTopics or DeleteTopics the admin gateway's decisions and writes (replog.common.topic_admin).

- `wire.py`, `schema.py`: Kafka's primitives and a declarative message codec (pure);
- `apis.py`: the APIs and versions offered, with their schemas (pure);
- `records.py`: Kafka's varint record batch <-> replog's batch (pure);
- `consumer_protocol.py`: the consumer group protocol's subscription and assignment bytes (pure);
- `errors.py`: replog's error codes as Kafka's (pure);
- `access.py`: the gRPC method table's authorization decisions applied to Kafka APIs;
- `handlers.py`: each API, through the broker's servicers;
- `topic_admin.py`: CreateTopics and DeleteTopics through the shared topic administration, and their waits;
- `server.py`: sockets, TLS and framing, one thread per connection;
- `wiring.py`: builds it for bootstrap.py.
"""
