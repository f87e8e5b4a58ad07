"""Producer ids for InitProducerId: blocks of ids claimed in ZooKeeper, handed out in order.

Kafka's ZK-mode ProducerIdManager: /latest_producer_id_block names the last
block any broker claimed. To claim the next, read it (data and version), write
the block after it with a version-checked set (or create the znode for the
first block), and retry from the read if another broker won the race. Ids of a
claimed block go out one by one; the next block is claimed when it runs out.
Unique across the cluster and across restarts (a restarted broker claims a
fresh block; unused ids of the old one are simply skipped).
"""

from __future__ import annotations

import logging
import threading

from kazoo.exceptions import BadVersionError, NodeExistsError

from replog.common.zk import schema
from replog.common.zk.client import ZkClient

log = logging.getLogger(__name__)

BLOCK_SIZE = 1000
CLAIM_ATTEMPTS_MAX = 20
PRODUCER_EPOCH_MAX = 32767


class ProducerIdsUnavailable(RuntimeError):
    """No block could be claimed (ZooKeeper unreachable or too contended)."""


class ProducerIdAllocator:
    def __init__(self, zk: ZkClient, broker_id: int) -> None:
        self._zk = zk
        self._broker_id = broker_id
        self._lock = threading.Lock()
        self._next_id = 0
        self._block_end = -1  # inclusive; nothing claimed yet

    def next_producer_id(self) -> int:
        with self._lock:
            if self._next_id > self._block_end:
                block = self._claim_block()
                self._next_id, self._block_end = block.block_start, block.block_end
            producer_id = self._next_id
            self._next_id += 1
            return producer_id

    def _claim_block(self) -> schema.ProducerIdBlock:
        kazoo = self._zk.kazoo
        for _ in range(CLAIM_ATTEMPTS_MAX):
            current = self._zk.get(schema.PRODUCER_ID_BLOCK)
            try:
                if current is None or not current[0]:
                    block = schema.ProducerIdBlock(self._broker_id, 0, BLOCK_SIZE - 1)
                    if current is None:
                        kazoo.create(schema.PRODUCER_ID_BLOCK, block.encode(),
                                     acl=self._zk.acl(schema.PRODUCER_ID_BLOCK))
                    else:
                        kazoo.set(schema.PRODUCER_ID_BLOCK, block.encode(), version=current[1].version)
                else:
                    previous = schema.ProducerIdBlock.decode(current[0])
                    start = previous.block_end + 1
                    block = schema.ProducerIdBlock(self._broker_id, start, start + BLOCK_SIZE - 1)
                    kazoo.set(schema.PRODUCER_ID_BLOCK, block.encode(), version=current[1].version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker claimed a block first: read again
            log.info("claimed producer id block [%d, %d]", block.block_start, block.block_end)
            return block
        raise ProducerIdsUnavailable(f"could not claim a producer id block in {CLAIM_ATTEMPTS_MAX} attempts")
