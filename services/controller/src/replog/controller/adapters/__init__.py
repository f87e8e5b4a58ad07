"""The controller's adapters: ZooKeeper seat, executor, gRPC servicers."""
