"""What the request handlers need from outside, wired once by bootstrap."""

from __future__ import annotations

import random
from dataclasses import dataclass

from replog.common.channels import ChannelCache
from replog.common.clock import Clock
from replog.common.zk.auth import ZkEndpoint
from replog.common.zk.client import ZkClient


@dataclass(frozen=True)
class GatewayDeps:
    zk: ZkClient
    channels: ChannelCache          # to brokers, for log stats and follower lag
    rng: random.Random              # placement's start index and shift when not fixed
    clock: Clock
    broker_rpc_timeout_s: float     # one DescribeReplicas call; a slower broker counts as unknown (-1)

    @property
    def connect(self) -> ZkEndpoint:
        """Where ZooKeeper is and how to authenticate there, for the bulk reader's sessions."""
        return self.zk.endpoint

    @property
    def kazoo(self):
        return self.zk.kazoo
