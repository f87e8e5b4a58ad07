"""What every replog service shares: config, the ZooKeeper schema and adapter,
gRPC helpers, tracing/metrics bootstrap, logging and the clock interface.
Nothing service-specific lives here."""
