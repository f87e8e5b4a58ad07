"""What the request handlers need from outside, wired once by bootstrap."""

from __future__ import annotations

import random
from dataclasses import dataclass

from replog.common.channels import ChannelCache
from replog.common.clock import Clock
from replog.common.zk.client import ZkClient


@dataclass(frozen=True)
class GatewayDeps:
    zk: ZkClient
    channels: ChannelCache          # to brokers, for log stats and follower lag
    rng: random.Random              # placement's start index and shift when not fixed
    clock: Clock
    broker_rpc_timeout_s: float     # one DescribeReplicas call; a slower broker counts as unknown (-1)

    @property
    def connect(self) -> str:
        return self.zk.connect_string

    @property
    def kazoo(self):
        return self.zk.kazoo
