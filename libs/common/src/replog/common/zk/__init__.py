"""ZooKeeper: `schema` owns every path and JSON shape; `client` is the thin kazoo adapter."""
