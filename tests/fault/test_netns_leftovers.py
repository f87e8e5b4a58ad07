"""The multi-host layout leaves nothing behind: not when a test fails with faults in place, not when a run is
killed (the next cluster removes its network), not when a namespace outlives its record."""

from __future__ import annotations

import contextlib
import secrets
import subprocess

import pytest

from replog.devcluster import ClusterSpec
from replog.devcluster.delay_proxy import LinkShape, delay_link
from replog.devcluster.netfaults import NetworkFaults
from replog.devcluster.netns import HostNetwork, run, sweep

from tests.conftest import ClusterFactory
from tests.fault.netns_helpers import leftovers
from tests.integration.broker_helpers import broker_name

pytestmark = pytest.mark.fault


def test_the_network_is_removed_even_when_the_test_body_raises_with_faults_in_place(tmp_path):
    factory = ClusterFactory(tmp_path)
    faults_left = contextlib.ExitStack()  # entered, and on purpose not closed before the teardown
    with pytest.raises(RuntimeError, match="the test body failed"):
        try:
            small = factory(ClusterSpec(hosts=True, controllers=1, brokers=2, gateways=0))
            tag = small.network.layout.tag
            assert leftovers(tag), "the cluster made no network"
            on = NetworkFaults(small.network)
            faults_left.enter_context(on.isolate(broker_name(1)))
            faults_left.enter_context(on.cut(broker_name(2), ["zookeeper"], one_way=True))
            faults_left.enter_context(delay_link(small.network, broker_name(2), broker_name(1),
                                                 small.processes["broker-1"].port, LinkShape(50)))
            raise RuntimeError("the test body failed")
        finally:
            factory.teardown()
    try:
        assert leftovers(tag) == []
    finally:
        faults_left.close()


def test_the_network_of_a_killed_run_is_removed_by_the_next_sweep(tmp_path):
    owner = subprocess.Popen(["sleep", "600"])
    network = HostNetwork.create(tmp_path, ["broker-1"], owner_pid=owner.pid)
    tag = network.layout.tag
    try:
        assert tag not in sweep(), "a network whose owner runs is not a leftover"
        assert leftovers(tag)
        owner.kill()
        owner.wait()
        assert tag in sweep()
        assert leftovers(tag) == []
    finally:
        owner.kill()
        network.destroy()


def test_a_network_whose_state_directory_is_gone_is_removed_by_the_next_sweep(tmp_path):
    network = HostNetwork.create(tmp_path / "state", ["broker-1"])  # owned by its state directory alone
    tag = network.layout.tag
    try:
        assert tag not in sweep()
        (tmp_path / "state" / "hosts.json").unlink()  # as when the state directory is deleted
        assert tag in sweep()
        assert leftovers(tag) == []
    finally:
        network.destroy()


def test_namespaces_and_links_no_record_names_are_removed_by_the_next_sweep():
    tag = f"f{secrets.token_hex(3)[:5]}"  # made as a run killed before it wrote its record would leave them
    run("ip", "netns", "add", f"replog-{tag}-broker-1")
    run("ip", "link", "add", f"rl-{tag}-br", "type", "bridge")
    try:
        assert tag in sweep()
        assert leftovers(tag) == []
    finally:
        run("ip", "netns", "delete", f"replog-{tag}-broker-1", check=False)
        run("ip", "link", "delete", f"rl-{tag}-br", check=False)
