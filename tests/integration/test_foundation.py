"""The foundation, end to end: a real cluster comes up healthy, a non-Python
client discovers every service through reflection and health, the CLI reports
the cluster, bad configuration fails in one line, and a service started without
ZooKeeper waits for it, unhealthy, until it is stopped."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.common.security import local
from replog.common.security.credentials import open_channel
from replog.common.security.principal import Principal
from replog.v1 import controller_pb2
from tests.integration.controller_helpers import wait_for
from tests.integration.tls_helpers import grpcurl_flags, operator_channel, service_flags, session_certificate

pytestmark = pytest.mark.integration

EXPECTED_SERVICES = {
    "controller": {"replog.v1.ControllerService"},
    "broker": {"replog.v1.BrokerControlService", "replog.v1.ReplicationService", "replog.v1.LogService"},
    "gateway": {"replog.v1.AdminService"},
}


def grpcurl(*args: str) -> subprocess.CompletedProcess:
    """grpcurl with the session's operator certificate (the cluster's CA signed it)."""
    binary = Path(sys.executable).parent / "grpcurl"
    assert binary.exists() or shutil.which("grpcurl"), "grpcurl is installed by requirements-dev.txt"
    return subprocess.run([str(binary), *grpcurl_flags(local.resolve_client_tls()), *args], capture_output=True,
                          text=True, timeout=30)


def test_grpcurl_lists_every_service_and_sees_serving(shared_cluster):
    services = [p for p in shared_cluster.processes.values() if p.role != "zookeeper"]
    assert sorted(p.role for p in services) == ["broker"] * 3 + ["controller"] * 2 + ["gateway"]
    for process in services:
        listed = grpcurl(process.address, "list")
        assert listed.returncode == 0, listed.stderr
        names = set(listed.stdout.split())
        assert EXPECTED_SERVICES[process.role] | {"grpc.health.v1.Health"} <= names, (process.name, names)
        for service in sorted(EXPECTED_SERVICES[process.role]) + [""]:
            request = json.dumps({"service": service})
            health = grpcurl("-d", request, process.address, "grpc.health.v1.Health/Check")
            assert health.returncode == 0, health.stderr
            assert json.loads(health.stdout)["status"] == "SERVING", (process.name, service)


def test_grpcurl_can_describe_the_contract(shared_cluster):
    described = grpcurl(shared_cluster.gateway_address, "describe", "replog.v1.AdminService")
    assert described.returncode == 0, described.stderr
    assert "rpc CreateTopic" in described.stdout and "rpc ExportTopology" in described.stdout


def test_exactly_one_controller_holds_the_seat_and_brokers_carry_racks(shared_cluster, venv_bin):
    result = subprocess.run(
        [str(venv_bin / "replog"), "--gateway", shared_cluster.gateway_address, "--output", "json", "cluster", "status"],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["controller_id"] in (1, 2)
    assert status["controller_epoch"] >= 1
    assert [(b["broker_id"], b["rack"], b["alive"], b["health"]) for b in status["brokers"]] == [
        (1, "a", True, "SERVING"), (2, "b", True, "SERVING"), (3, "c", True, "SERVING"),
    ]


def test_cli_table_output_names_the_controller(shared_cluster, venv_bin):
    result = subprocess.run(
        [str(venv_bin / "replog"), "--gateway", shared_cluster.gateway_address, "cluster", "describe"],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "Active controller" in result.stdout
    assert "127.0.0.1" in result.stdout


def test_cli_reports_an_unreachable_gateway_in_one_line(venv_bin):
    result = subprocess.run(
        [str(venv_bin / "replog"), "--gateway", "127.0.0.1:1", "cluster", "status"],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "cannot reach the gateway at 127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_usage_errors_exit_2(venv_bin):
    result = subprocess.run([str(venv_bin / "replog"), "no-such-command"], capture_output=True, text=True)
    assert result.returncode == 2


@pytest.mark.parametrize("program", ["replog-controller", "replog-broker", "replog-gateway"])
@pytest.mark.parametrize(
    "args, expected",
    [
        (["--unknown-flag", "1"], "unrecognized arguments: --unknown-flag"),
        (["--port", "65536"], "--port=65536 must be a TCP port"),
        (["--zookeeper", "127.0.0.1"], "--zookeeper='127.0.0.1' has a bad host:port '127.0.0.1'"),
    ],
)
def test_bad_configuration_exits_nonzero_with_one_line(program, args, expected, venv_bin, tmp_path):
    result = subprocess.run([str(venv_bin / program), *args], capture_output=True, text=True, timeout=30,
                            cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert expected in last and last.startswith(f"{program}:"), result.stderr


# One RPC of each program's own service, and who may call it: refused while the program waits for ZooKeeper.
OWN_RPC = {
    "replog-controller": ("/replog.v1.ControllerService/AlterPartition", Principal("broker", "1"),
                          controller_pb2.AlterPartitionRequest(broker_id=1).SerializeToString()),
    "replog-broker": ("/replog.v1.LogService/DescribeReplicas", local.OPERATOR, b""),
    "replog-gateway": ("/replog.v1.AdminService/ListTopics", local.OPERATOR, b""),
}


def health_status(address: str):
    """The process's own word on its health, or None when it does not answer."""
    try:
        with operator_channel(address) as channel:
            return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2).status
    except grpc.RpcError:
        return None


@pytest.mark.parametrize("program", ["replog-controller", "replog-broker", "replog-gateway"])
def test_a_service_without_zookeeper_waits_unhealthy_and_stops_cleanly(program, venv_bin, tmp_path):
    # Nothing listens on the ZooKeeper port: the program must neither exit nor pretend to serve.
    from replog.devcluster.ports import free_port

    zookeeper = f"127.0.0.1:{free_port()}"
    address = f"127.0.0.1:{free_port()}"
    log_path = tmp_path / "service.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(venv_bin / program), "--zookeeper", zookeeper, "--port", address.rsplit(":", 1)[1],
             "--metrics-port", "0",  # not the fixed default: other runs on this host may hold it
             *service_flags(session_certificate(Principal(program.removeprefix("replog-"), "1"), tmp_path))],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        def waiting_lines() -> list[str]:
            return [line for line in log_path.read_text().splitlines()
                    if f"waiting for ZooKeeper at {zookeeper}: no answer yet" in line]

        wait_for(lambda: process.poll() is not None or waiting_lines(), 60, f"{program} to say it waits")
        assert process.poll() is None, log_path.read_text()
        assert health_status(address) == health_pb2.HealthCheckResponse.NOT_SERVING
        method, caller, request = OWN_RPC[program]
        caller_tls = session_certificate(caller, tmp_path / "caller")
        with open_channel(address, caller_tls) as channel, pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary(method)(request, timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert f"waiting for ZooKeeper at {zookeeper}" in refused.value.details()

        process.send_signal(signal.SIGTERM)
        stopped_s = time.monotonic()
        assert process.wait(timeout=20) == 0
        assert time.monotonic() - stopped_s < 10, "a stop while waiting for ZooKeeper must not wait for it"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log_path.read_text()
    assert "Traceback" not in text
    assert len(waiting_lines()) == 1, text  # said once; kazoo's own per-attempt lines are rate-limited
    assert text.count("Connection dropped") <= 1, text


def test_standby_controller_takes_over_when_the_active_one_dies(cluster_factory):
    from replog.common.zk import schema
    from replog.common.zk.client import ZkClient

    cluster = cluster_factory()
    zk = ZkClient(cluster.zookeeper_endpoint)
    zk.start()
    try:
        first = schema.ControllerRecord.decode(zk.get(schema.CONTROLLER)[0]).controller_id
        epoch = schema.decode_controller_epoch(zk.get(schema.CONTROLLER_EPOCH)[0])
        cluster.kill(f"controller-{first}")
        import time

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = zk.get(schema.CONTROLLER)
            if found and schema.ControllerRecord.decode(found[0]).controller_id != first:
                break
            time.sleep(0.1)
        else:
            pytest.fail("no standby took the seat within 20 s")
        # The seat is /controller first, then the epoch increment (as in Kafka): wait for both.
        while time.monotonic() < deadline:
            if schema.decode_controller_epoch(zk.get(schema.CONTROLLER_EPOCH)[0]) == epoch + 1:
                break
            time.sleep(0.1)
        assert schema.decode_controller_epoch(zk.get(schema.CONTROLLER_EPOCH)[0]) == epoch + 1
    finally:
        zk.stop()


def test_up_twice_is_harmless_and_down_leaves_nothing_running(cluster_factory):
    cluster = cluster_factory()
    pids = {name: info.pid for name, info in cluster.processes.items()}
    cluster.up()  # again
    assert {name: info.pid for name, info in cluster.processes.items()} == pids
    from replog.devcluster import LocalCluster

    reopened = LocalCluster(cluster.state_dir)  # as a second `make up` would see it
    assert all(row["healthy"] for row in reopened.status())
    reopened.down()
    assert not any(row["running"] for row in LocalCluster(cluster.state_dir).status())
    import socket
    import subprocess

    for info in cluster.processes.values():
        # Every port is free for a new server (SO_REUSEADDR as servers use it: closed connections may
        # linger in TIME_WAIT, listeners may not) -- or, on a machine that runs other clusters, taken by
        # a listener that is none of ours.
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", info.port))
            except OSError:
                listeners = subprocess.run(["ss", "-Hltnp", f"sport = :{info.port}"], capture_output=True,
                                           text=True, check=True).stdout
                assert not any(f"pid={pid}," in listeners for pid in pids.values()), (info.name, listeners)


def test_a_planned_cluster_never_gives_two_processes_one_port(tmp_path):
    # CI once gave two controllers the same port: the second could not bind and died.
    from replog.devcluster import ClusterSpec, LocalCluster
    from replog.devcluster.ports import _ephemeral_range

    ports = []
    for n in range(20):
        cluster = LocalCluster(tmp_path / f"c{n}", ClusterSpec(controllers=3, brokers=6, gateways=2))
        cluster._plan()
        ports += [p for info in cluster.processes.values() for p in (info.port, info.metrics_port) if p]
    assert len(ports) == len(set(ports)) == 20 * (1 + 2 * 11)
    # Below the range the kernel hands to outgoing connections, which could otherwise take a
    # planned port between planning and a restart.
    assert max(ports) < _ephemeral_range()[0]
