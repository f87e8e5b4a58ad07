"""The multi-host layout's names and addresses (devcluster/hosts.py): one address per process, by role, and names
the kernel accepts (an interface name is at most 15 characters) that carry the cluster's tag."""

from __future__ import annotations

import pytest

from replog.devcluster.hosts import HostLayout, LayoutError, tag_of

LAYOUT = HostLayout("a1b2c", 42)


def test_each_role_has_its_own_range_of_addresses_in_the_clusters_subnet():
    assert LAYOUT.root_address == "10.211.42.1"
    assert LAYOUT.address("client") == "10.211.42.2"
    assert LAYOUT.address("zookeeper") == "10.211.42.10"
    assert [LAYOUT.address(f"zookeeper-{i}") for i in (1, 2, 3)] == ["10.211.42.11", "10.211.42.12", "10.211.42.13"]
    assert LAYOUT.address("controller-2") == "10.211.42.22"
    assert LAYOUT.address("gateway-1") == "10.211.42.31"
    assert LAYOUT.address("broker-150") == "10.211.42.250"
    assert str(LAYOUT.network) == "10.211.42.0/24"


def test_names_carry_the_tag_and_interface_names_fit_the_kernels_limit():
    assert LAYOUT.namespace("broker-3") == "replog-a1b2c-broker-3"
    longest = HostLayout("abcdef", 254)
    for name in (longest.bridge, longest.outer_link("broker-150"), longest.outer_link("client")):
        assert len(name) <= 15, name
    for name in (LAYOUT.bridge, LAYOUT.outer_link("broker-1"), LAYOUT.namespace("zookeeper")):
        assert LAYOUT.owns(name) and tag_of(name) == "a1b2c"
    assert not LAYOUT.owns("replog-a1b2cd-broker-1")
    assert tag_of("eth0") is None and tag_of("replog-test-x") is None


@pytest.mark.parametrize("host", ["broker-0", "broker-151", "controller-10", "proxy-1", "broker", "broker-x"])
def test_a_host_outside_the_layout_is_refused_with_the_room_there_is(host):
    with pytest.raises(LayoutError):
        LAYOUT.address(host)


@pytest.mark.parametrize("tag, subnet", [("", 1), ("ABCDE", 1), ("abcdefg", 1), ("a-b", 1), ("abc", 0), ("abc", 255)])
def test_a_bad_tag_or_subnet_is_refused(tag, subnet):
    with pytest.raises(LayoutError):
        HostLayout(tag, subnet)


def test_a_cluster_planned_again_on_a_new_subnet_gets_certificates_for_its_new_addresses(tmp_path):
    """A first start retried on another network (ports or a subnet taken meanwhile) must not keep the
    certificates of the first plan: the services refuse to advertise an address their certificate lacks."""
    from replog.devcluster import tls

    tls.prepare(tmp_path, [("broker", "1")], addresses={("broker", "1"): LAYOUT.address("broker-1")})
    cert_file = tmp_path / "tls" / "broker-1.pem"
    assert LAYOUT.address("broker-1") in tls._addresses_of(str(cert_file))
    moved = HostLayout("a1b2c", 43)
    tls.prepare(tmp_path, [("broker", "1")], addresses={("broker", "1"): moved.address("broker-1")})
    assert moved.address("broker-1") in tls._addresses_of(str(cert_file))
