"""The deployment files as tools read them, offline: the Kubernetes manifests (and the Secrets
make_secrets.py writes) are valid under `kubernetes-validate --strict` and have the shape the issue of
real deployments asks for; the compose file is valid for compose v2 and starts the cluster it promises;
the configuration files they mount load as each service would load them."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from replog.broker.config import BrokerConfig
from replog.common import ports
from replog.common.config import load_config
from replog.controller.config import ControllerConfig
from replog.gateway.config import GatewayConfig

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KUBERNETES = REPO / "deploy" / "kubernetes"
COMPOSE = REPO / "deploy" / "compose"
VERSION = tomllib.loads((REPO / "libs" / "common" / "pyproject.toml").read_text())["project"]["version"]


def manifests() -> dict[tuple[str, str], dict]:
    found = {}
    for path in sorted(KUBERNETES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                found[(document["kind"], document["metadata"]["name"])] = document
    return found


def validate(*paths: Path) -> None:
    done = subprocess.run([str(BIN / "kubernetes-validate"), "--strict", "--quiet", *map(str, paths)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_manifest_is_valid_under_kubernetes_strict_schema():
    validate(*sorted(KUBERNETES.glob("*.yaml")))


def containers(workload: dict) -> list[dict]:
    return workload["spec"]["template"]["spec"]["containers"]


def test_the_manifests_have_the_shape_of_a_real_deployment():
    found = manifests()
    for name, service in (("zookeeper", "zookeeper"), ("replog-broker", "replog-broker")):
        statefulset = found[("StatefulSet", name)]
        headless = found[("Service", statefulset["spec"]["serviceName"])]
        assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"]
        assert statefulset["spec"]["volumeClaimTemplates"], name
        budget = found[("PodDisruptionBudget", name)]
        assert budget["spec"]["maxUnavailable"] == 1
        assert budget["spec"]["selector"]["matchLabels"] == statefulset["spec"]["selector"]["matchLabels"]
    broker = containers(found[("StatefulSet", "replog-broker")])[0]
    assert broker["lifecycle"]["preStop"]["exec"]["command"] == ["replog-broker-shutdown"]
    assert 'id=${POD_NAME##*-}' in broker["args"][0] and '--broker-id "$id"' in broker["args"][0]
    for kind, name in (("Deployment", "replog-controller-1"), ("Deployment", "replog-controller-2"),
                       ("Deployment", "replog-gateway"), ("StatefulSet", "replog-broker")):
        workload = found[(kind, name)]
        assert workload["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"]
        (container,) = containers(workload)
        assert container["image"] == f"localhost/replog:{VERSION}"
        assert container["readinessProbe"]["exec"]["command"] == ["replog-healthcheck"]
        assert container["livenessProbe"]["exec"]["command"] == ["replog-healthcheck", "--live"]
        role = name.removeprefix("replog-").split("-")[0]
        assert {p["containerPort"] for p in container["ports"]} == {
            ports.BY_ROLE[role].grpc, ports.BY_ROLE[role].metrics, *([ports.BROKER_KAFKA] if role == "broker" else [])}


def test_the_secrets_make_secrets_writes_are_valid_and_name_each_pod(tmp_path):
    done = subprocess.run([sys.executable, str(KUBERNETES / "make_secrets.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    validate(tmp_path / "secrets.yaml")
    certificate = x509.load_pem_x509_certificate((tmp_path / "files" / "replog-broker-tls" / "broker-2.pem").read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.UniformResourceIdentifier) == ["replog://broker/2"]
    assert "replog-broker-2.replog-broker.replog.svc.cluster.local" in names.get_values_for_type(x509.DNSName)
    secrets = {d["metadata"]["name"] for d in yaml.safe_load_all((tmp_path / "secrets.yaml").read_text()) if d}
    mounted = {volume["secret"]["secretName"] for workload in manifests().values()
               if workload["kind"] in ("StatefulSet", "Deployment")
               for volume in workload["spec"]["template"]["spec"]["volumes"] if "secret" in volume}
    assert mounted <= secrets, mounted - secrets


def test_the_compose_file_is_valid_and_starts_the_promised_cluster():
    done = subprocess.run([str(BIN / "docker-compose"), "-f", str(COMPOSE / "compose.yaml"), "config", "-q"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    services = yaml.safe_load((COMPOSE / "compose.yaml").read_text())["services"]
    assert sorted(services) == ["broker-1", "broker-2", "broker-3", "controller-1", "controller-2", "gateway-1",
                                "zookeeper-1", "zookeeper-2", "zookeeper-3"]
    for name, service in services.items():
        volumes = " ".join(service["volumes"])
        if name.startswith(("zookeeper", "broker")):
            assert f"{name}-data:" in volumes, name
        assert service["hostname"] == name


@pytest.mark.parametrize("role, config, environment", [
    ("controller", ControllerConfig, {"REPLOG_CONTROLLER_ID": "2", "REPLOG_ADVERTISED_HOST": "controller-2"}),
    ("broker", BrokerConfig, {"REPLOG_BROKER_ID": "3", "REPLOG_RACK": "c", "REPLOG_ADVERTISED_HOST": "broker-3"}),
    ("gateway", GatewayConfig, {}),
])
def test_the_mounted_configuration_files_load_with_tls_and_zookeeper_authentication(role, config, environment):
    loaded = load_config(config, ["--config", str(COMPOSE / "config" / f"{role}.toml")], environment, prog=role)
    assert not loaded.insecure and loaded.zookeeper_credentials_file and loaded.tls_cert_file
    assert loaded.zookeeper.count(":2181") == 3
    text = yaml.safe_load((KUBERNETES / "config.yaml").read_text())["data"][f"{role}.toml"]
    file_keys = tomllib.loads(text)
    assert set(file_keys) <= {field for field in config.__dataclass_fields__}
