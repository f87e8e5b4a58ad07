"""A secure cluster of separate hosts (ClusterSpec.hosts: a network namespace per process) under network faults.

One cluster for the module: ZooKeeper, 2 controllers, 3 brokers and a gateway, each on its own address, with
mutual TLS (every certificate names its host's address) and ZooKeeper authentication. Each test makes a topic
of its own, RF 3 with min.insync.replicas=2 and broker 1 as preferred leader, and every fault is a `with` that
heals when it ends. The test process calls the services from the root namespace, through the bridge; the CLI
runs on the `client` host.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replog.devcluster import ClusterSpec
from replog.devcluster.delay_proxy import LinkShape, delay_link
from replog.devcluster.netfaults import NetworkFaults
from replog.v1 import common_pb2
from tests.conftest import ClusterFactory
from tests.fault.netns_helpers import namespace_of
from tests.integration.broker_helpers import (
    batch_of,
    broker_name,
    create_topic,
    partition_state,
    produce_raw,
    wait_for,
    wait_for_isr,
    wait_for_leader,
    zk_session,
)

pytestmark = pytest.mark.fault

SESSION_TIMEOUT_MS = 4000
LAG_MS = 2000
# Room on a busy machine of 2 cores between a deadline the protocol sets and seeing its effect.
MARGIN_S = 10.0
CUT_S = 6.0  # how long a partial cut lasts: past LAG_MS, so the ISR shrinks during it
OK = common_pb2.ERROR_CODE_NONE


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    factory = ClusterFactory(tmp_path_factory.mktemp("hosts"))
    cluster = factory(ClusterSpec(hosts=True, zookeeper_session_timeout_ms=SESSION_TIMEOUT_MS,
                                  extra_args={"broker": ["--replica-lag-time-max-ms", str(LAG_MS)]}))
    yield cluster
    factory.teardown()


@pytest.fixture(scope="module")
def faults(cluster):
    return NetworkFaults(cluster.network)


@contextlib.contextmanager
def topic_led_by_1(cluster, name: str):
    """A topic of one partition on brokers (1, 2, 3), led by 1 with all three in the ISR; yields a ZooKeeper
    session."""
    with zk_session(cluster) as zk:
        create_topic(zk, name, {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
        wait_for_leader(cluster, zk, name, 1, 30, followers=(2, 3))
        wait_for_isr(cluster, zk, name, {1, 2, 3}, 30)
        assert produce_raw(cluster, 1, name, batch_of([b"before"])).error_code == OK
        yield zk


def client_cli(cluster, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """The replog CLI run on the client host; returns what it printed."""
    command = [*cluster.network.exec_prefix("client"), str(Path(sys.executable).parent / "replog"),
               "--gateway", cluster.gateway_address, *args]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{' '.join(args)} failed: {done.stderr}"
    return done


def test_every_process_runs_on_its_own_host_and_the_cli_on_the_client_host_produces_and_consumes(cluster):
    addresses = {info.host for info in cluster.processes.values()}
    assert len(addresses) == len(cluster.processes)
    assert all(info.host.startswith("10.211.") for info in cluster.processes.values())
    for name, info in cluster.processes.items():
        assert namespace_of(info.pid) == [cluster.network.namespace(name)], f"{name} is not on its own host"

    client_cli(cluster, "topics", "create", "from-client", "--partitions", "3", "--replication-factor", "3")
    produced = client_cli(cluster, "produce", "--topic", "from-client", "--acks", "all",
                          stdin="".join(f"line-{i}\n" for i in range(30)))
    assert "produced 30 record(s)" in produced.stderr, produced.stderr
    consumed = client_cli(cluster, "consume", "--topic", "from-client", "--from-beginning", "--max-records", "30",
                          "--timeout-ms", "20000")
    assert sorted(consumed.stdout.split()) == sorted(f"line-{i}" for i in range(30))


def test_an_isolated_leader_loses_leadership_and_acks_all_writes_continue(cluster, faults):
    with topic_led_by_1(cluster, "isolated") as zk:
        with faults.isolate(broker_name(1)):
            cut_at = time.monotonic()
            state = wait_for(lambda: (s := partition_state(zk, "isolated")) and s.leader in (2, 3) and s,
                             SESSION_TIMEOUT_MS / 1000 + MARGIN_S, "a leader other than the isolated broker 1")
            moved_s = time.monotonic() - cut_at
            print(f"leadership moved {moved_s:.1f} s after the leader was isolated")
            new_leader = state.leader
            wait_for_leader(cluster, zk, "isolated", new_leader, 30)
            written = produce_raw(cluster, new_leader, "isolated", batch_of([b"during"]))
            assert written.error_code == OK, written
        # Its session expired while it was cut off: back, it registers again and catches up as a follower.
        wait_for_isr(cluster, zk, "isolated", {1, 2, 3}, 60)
        assert produce_raw(cluster, new_leader, "isolated", batch_of([b"after"])).error_code == OK


def test_a_one_way_cut_from_a_follower_to_its_leader_shrinks_the_isr_and_writes_go_on(cluster, faults):
    with topic_led_by_1(cluster, "one-way") as zk:
        with faults.cut(broker_name(3), [broker_name(1)], one_way=True):
            cut_at = time.monotonic()
            # A record broker 3 cannot fetch: caught up with an idle leader, it would stay in the ISR.
            assert produce_raw(cluster, 1, "one-way", batch_of([b"during"]), acks=1).error_code == OK
            wait_for_isr(cluster, zk, "one-way", {1, 2}, LAG_MS / 1000 + MARGIN_S)
            print(f"the ISR shrank {time.monotonic() - cut_at:.1f} s after the one-way cut")
            assert produce_raw(cluster, 1, "one-way", batch_of([b"acks-all"])).error_code == OK
        wait_for_isr(cluster, zk, "one-way", {1, 2, 3}, 60)
        assert produce_raw(cluster, 1, "one-way", batch_of([b"after"])).error_code == OK


def test_a_leader_cut_from_its_followers_shrinks_the_isr_and_writes_resume_after_the_heal(cluster, faults):
    with topic_led_by_1(cluster, "from-followers") as zk:
        with faults.cut(broker_name(1), [broker_name(2), broker_name(3)]):
            cut_at = time.monotonic()
            assert produce_raw(cluster, 1, "from-followers", batch_of([b"during"]), acks=1).error_code == OK
            wait_for_isr(cluster, zk, "from-followers", {1}, LAG_MS / 1000 + MARGIN_S)
            print(f"the ISR shrank to the leader {time.monotonic() - cut_at:.1f} s after the cut")
            refused = produce_raw(cluster, 1, "from-followers", batch_of([b"refused"]))
            assert refused.error_code == common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS, refused
            # The outage lasts CUT_S whatever happens in it: this is the cut's length, not a wait for an event.
            time.sleep(max(0.0, cut_at + CUT_S - time.monotonic()))
        healed_at = time.monotonic()
        wait_for_isr(cluster, zk, "from-followers", {1, 2, 3}, 60)
        print(f"writes resumed {time.monotonic() - healed_at:.1f} s after the heal")
        assert produce_raw(cluster, 1, "from-followers", batch_of([b"after"])).error_code == OK


# 100 ms: the figure. 300 ms: a connection's set-up (TCP, TLS 1.3, HTTP/2 settings) takes about four
# one-way trips, longer than the 1 s gRPC once gave a connect attempt (docs/testing.md, "connect deadlines").
@pytest.mark.parametrize("delay_ms", [100, 300])
def test_a_delayed_link_from_a_follower_to_its_leader_slows_acks_all_writes_by_the_delay(cluster, delay_ms):
    topic = f"delayed-{delay_ms}"
    with topic_led_by_1(cluster, topic) as zk:
        with delay_link(cluster.network, broker_name(2), broker_name(1), cluster.processes["broker-1"].port,
                        LinkShape(delay_ms)) as proxy:
            # The follower's old connection is reset; it reconnects, through the proxy, and (its fetches' round
            # trips well within LAG_MS) is in the ISR, which an acks=all write waits for.
            wait_for(lambda: proxy is None or proxy.connections > 0, 30, "broker 2 to reconnect to broker 1")
            assert produce_raw(cluster, 1, topic, batch_of([b"through the proxy"])).error_code == OK
            wait_for_isr(cluster, zk, topic, {1, 2, 3}, 30)
            round_trips = []
            for i in range(3):
                started = time.monotonic()
                assert produce_raw(cluster, 1, topic, batch_of([f"slow-{i}".encode()])).error_code == OK
                round_trips.append(time.monotonic() - started)
            assert set(partition_state(zk, topic).isr) == {1, 2, 3}, "broker 2 left the ISR while measured"
        print("acks=all round trips with the delay: " + ", ".join(f"{s * 1000:.0f} ms" for s in round_trips))
        assert min(round_trips) >= delay_ms / 1000, round_trips
        assert produce_raw(cluster, 1, topic, batch_of([b"after"])).error_code == OK
