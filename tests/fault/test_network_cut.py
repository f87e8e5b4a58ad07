"""A network cut between a leader and its followers heals: the followers rejoin the ISR within seconds.

The cut black-holes the followers' connections to the leader's port (network_cut.py): no
reset, no answer, as when the link between them dies. The leader keeps its ZooKeeper
session and its controller link, so it stays leader, takes both followers out of the ISR
once a record they cannot fetch is older than replica.lag.time.max.ms, and refuses
acks=all while min.insync.replicas=2 cannot be met. When the cut heals, the followers must
find out that their connections died and open new ones, rather than wait for TCP's
retransmission back-off to try the path again (issue 36: that took about 27 s, with
acks=all refused all along).
"""

from __future__ import annotations

import time

import pytest

from replog.devcluster import ClusterSpec
from replog.v1 import common_pb2

from tests.fault.network_cut import black_hole, process_group
from tests.integration.broker_helpers import (  # noqa: F401 - start_cluster is a fixture
    batch_of,
    broker_name,
    create_topic,
    describe,
    produce_raw,
    start_cluster,
    wait_caught_up,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

LAG_MS = 2000
# How long the network stays cut: past a fetch's deadline (the long poll's wait plus fetcher.RPC_SLACK_S), so
# a fetcher gives up on its stream during the cut, and long enough for TCP's retransmission back-off to grow
# to seconds, as in a real outage.
CUT_S = 15.0
REJOIN_S_MAX = 5.0  # from the cut healing to both followers back in the ISR, in ZooKeeper and at the leader


def test_followers_rejoin_the_isr_within_seconds_of_a_network_cut_healing(start_cluster):
    cluster = start_cluster(ClusterSpec(controllers=1, gateways=0,
                                        extra_args={"broker": ["--replica-lag-time-max-ms", str(LAG_MS)]}))
    followers = [cluster.processes[broker_name(b)].pid for b in (2, 3)]
    leader_port = cluster.processes[broker_name(1)].port
    # Moved before they follow broker 1: their connections to it are made in the group, and so can be cut.
    with process_group(followers) as group, zk_session(cluster) as zk:
        create_topic(zk, "cut", {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, "cut", 1, 30, followers=(2, 3))
        wait_for_isr(cluster, zk, "cut", {1, 2, 3}, 30)
        assert produce_raw(cluster, 1, "cut", batch_of([b"before"])).error_code == common_pb2.ERROR_CODE_NONE

        with black_hole(group, leader_port):
            cut_at = time.monotonic()
            # A record the followers cannot fetch: caught up with an idle leader, they would stay in the ISR.
            during = produce_raw(cluster, 1, "cut", batch_of([b"during"]), acks=1)
            assert during.error_code == common_pb2.ERROR_CODE_NONE, during
            wait_for_isr(cluster, zk, "cut", {1}, LAG_MS / 1000 + 30)
            refused = produce_raw(cluster, 1, "cut", batch_of([b"refused"]))
            assert refused.error_code == common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS, refused
            # The outage lasts CUT_S whatever happens in it: this is the cut's length, not a wait for an event.
            time.sleep(max(0.0, cut_at + CUT_S - time.monotonic()))
        healed_at = time.monotonic()

        # The deadline leaves room to measure a slow rejoin; the assertion below is the goal.
        wait_for_isr(cluster, zk, "cut", {1, 2, 3}, 60)
        rejoin_s = time.monotonic() - healed_at
        print(f"followers rejoined the ISR {rejoin_s:.2f} s after the cut healed")
        assert rejoin_s < REJOIN_S_MAX, f"followers rejoined the ISR {rejoin_s:.1f} s after the cut healed"
        after = produce_raw(cluster, 1, "cut", batch_of([b"after"]))
        assert after.error_code == common_pb2.ERROR_CODE_NONE, after
    end = describe(cluster, 1, "cut").log_end_offset
    assert end == 3
    wait_caught_up(cluster, (1, 2, 3), "cut", end, 20)
