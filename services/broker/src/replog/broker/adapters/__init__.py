"""The broker's adapters: ZooKeeper registration, gRPC servicers, fetchers, files."""
