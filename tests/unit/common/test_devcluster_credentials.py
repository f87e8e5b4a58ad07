"""The local cluster's ZooKeeper credentials: made once per identity, one 0600 file per process, the
super digest on ZooKeeper's command line; none of it with `zookeeper_auth=False`."""

from __future__ import annotations

import stat

from replog.common.zk.auth import digest_id, load_credentials
from replog.devcluster import ClusterSpec, LocalCluster, zk_credentials


def flag_value(command: list[str], flag: str) -> str | None:
    return command[command.index(flag) + 1] if flag in command else None


def test_every_process_gets_its_own_credentials_and_zookeeper_the_super_digest(tmp_path):
    cluster = LocalCluster(tmp_path, ClusterSpec(controllers=2, brokers=2, gateways=1))
    cluster._plan()
    directory = zk_credentials.credentials_dir(tmp_path)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for name in ("controller-1", "controller-2", "broker-1", "broker-2", "gateway-1", "super"):
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600, name
    expected = {"controller-1": ["controller"], "controller-2": ["controller"], "broker-2": ["broker-2", "brokers"],
                "gateway-1": ["gateway"]}
    for name, users in expected.items():
        path = flag_value(cluster.processes[name].command, "--zookeeper-credentials-file")
        assert path == str(directory / name)
        assert [user for user, _ in load_credentials(path).identities] == users
    super_user = load_credentials(str(directory / "super"))
    zookeeper = cluster.processes["zookeeper"].command
    assert f"-Dzookeeper.DigestAuthenticationProvider.superDigest={digest_id(*super_user.identities[0])}" in zookeeper
    # A controller knows each broker's digest id, to check registrations exactly.
    controller = load_credentials(str(directory / "controller-1"))
    assert controller.digest_of("broker-2") == load_credentials(str(directory / "broker-2")).digest_of("broker-2")
    assert cluster.zookeeper_endpoint.credentials == super_user


def test_passwords_are_kept_across_plans(tmp_path):
    LocalCluster(tmp_path, ClusterSpec(brokers=1))._plan()
    before = (zk_credentials.credentials_dir(tmp_path) / "broker-1").read_text()
    (tmp_path / "cluster.json").unlink()
    LocalCluster(tmp_path, ClusterSpec(brokers=1))._plan()
    assert (zk_credentials.credentials_dir(tmp_path) / "broker-1").read_text() == before


def test_a_cluster_without_zookeeper_authentication_has_no_credentials(tmp_path):
    cluster = LocalCluster(tmp_path, ClusterSpec(zookeeper_auth=False))
    cluster._plan()
    assert not zk_credentials.credentials_dir(tmp_path).exists()
    assert all("--zookeeper-credentials-file" not in p.command for p in cluster.processes.values())
    assert not any("superDigest" in arg for arg in cluster.processes["zookeeper"].command)
    assert cluster.zookeeper_endpoint.credentials is None
