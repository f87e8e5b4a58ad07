"""The local cluster's ZooKeeper ensemble plan: each server's config from its id and the list of servers."""

from __future__ import annotations

import pytest

from replog.devcluster import ClusterSpec, LocalCluster, zookeeper
from replog.devcluster.spec import ClusterError

SERVERS = [zookeeper.ServerAddress(i, f"10.0.0.{i}", 2180 + i, 2880 + i, 3880 + i) for i in (1, 2, 3)]


def test_an_ensemble_member_names_every_peer_and_listens_on_its_own_address(tmp_path):
    config = zookeeper.write_server_config(tmp_path, 2, SERVERS).read_text().splitlines()
    assert "clientPort=2182" in config and "clientPortAddress=10.0.0.2" in config
    assert [line for line in config if line.startswith("server.")] == [
        "server.1=10.0.0.1:2881:3881", "server.2=10.0.0.2:2882:3882", "server.3=10.0.0.3:2883:3883"]
    assert (tmp_path / "data" / "myid").read_text() == "2\n"
    assert "4lw.commands.whitelist=ruok,stat,mntr,srvr,cons" in config


def test_a_single_server_runs_standalone(tmp_path):
    config = zookeeper.write_config(tmp_path, 2181).read_text()
    assert "server." not in config and "clientPort=2181" in config
    assert not (tmp_path / "data" / "myid").exists()


@pytest.mark.parametrize("servers", [0, 2, -1])
def test_an_ensemble_that_cannot_survive_a_death_is_refused(tmp_path, servers):
    with pytest.raises(ClusterError, match=f"1 or an odd number.*not {servers}"):
        LocalCluster(tmp_path, ClusterSpec(zookeeper_servers=servers))
