"""Creating and deleting topics: the decision and its ZooKeeper writes, shared by the admin gateway
(AdminService.CreateTopic/DeleteTopic) and a broker's Kafka listener (CreateTopics/DeleteTopics), so
both validate, place and write a topic the same way.

``core`` decides on a snapshot of the cluster and writes nothing (model, names, health, refusal,
topics); ``zk_view`` reads that snapshot; ``zk_writes`` holds the version-checked transaction helpers;
``writes`` performs a create or delete decision in one transaction.
"""
