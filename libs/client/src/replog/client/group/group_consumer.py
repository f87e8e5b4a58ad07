"""`GroupConsumer`: the name a consumer in a group had before the Consumer took groups itself.

`GroupConsumer(bootstrap, topics, group_id=G, ...)` is `Consumer(bootstrap, topics, group_id=G, ...)`
(consumer.py; the group's part is coordination.py), kept so that code written against it still runs.
"""

from __future__ import annotations

from replog.client.consumer import Consumer


class GroupConsumer(Consumer):
    def __init__(self, bootstrap: str | list[str], topics: str | list[str], *, group_id: str, **settings) -> None:
        super().__init__(bootstrap, topics, group_id=group_id, **settings)
