"""deploy/kubernetes/*.yaml as `podman kube play` (podman 4.3) can run them: the parts it supports, the
rest translated, nothing else changed.

podman plays Pods, Deployments, ConfigMaps and PersistentVolumeClaims. So, here:
- a StatefulSet becomes its pods, `<name>-<ordinal>` (hostname too), each with the PVCs of its
  volumeClaimTemplates (`<claim>-<name>-<ordinal>`, as Kubernetes names them);
- a Deployment becomes one pod named as the Deployment (and its Service): one replica each;
- Services, the Namespace and PodDisruptionBudgets are dropped: podman's network resolves a pod by its
  name, which is what the Services give in Kubernetes;
- containers lose their `ports`: podman 4.3 publishes each containerPort on the host, where the pods would
  collide (Kubernetes only documents them; pods reach each other on the pod network all the same);
- a Secret volume becomes a hostPath directory holding the Secret's files (make_secrets.py writes them),
  owned by the pod's user: podman 4.3 crashes on Secret volumes;
- the names ConfigMap (`replog-names`) names the pods as podman's network resolves them.
The certificates make_secrets.py issues carry those bare names too.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import yaml

from tests.deploy.harness import REPO

KUBERNETES = REPO / "deploy" / "kubernetes"
PODMAN_NAMES = {
    "zookeeper": "zookeeper-0:2181,zookeeper-1:2181,zookeeper-2:2181",
    "zookeeper_servers": "zookeeper-0,zookeeper-1,zookeeper-2",
    "broker_domain": "",
    "controller_1_host": "replog-controller-1",
    "controller_2_host": "replog-controller-2",
}


# The order podman starts things in: what pods refer to first, then ZooKeeper, which everything waits for.
FILE_ORDER = ("namespace.yaml", "names.yaml", "config.yaml", "zookeeper.yaml", "controller.yaml", "broker.yaml",
              "gateway.yaml")


def load() -> list[dict]:
    files = sorted(KUBERNETES.glob("*.yaml"), key=lambda p: (FILE_ORDER.index(p.name) if p.name in FILE_ORDER
                                                            else len(FILE_ORDER), p.name))
    return [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc]


def translate(documents: list[dict], secret_files: Path, host_dir: Path) -> tuple[list[dict], dict[str, str], list[str]]:
    """(documents to play, the container podman names for each pod, by pod, volume names)."""
    played, pods, volumes = [], {}, []
    for doc in documents:
        kind = doc["kind"]
        if kind in ("Namespace", "Service", "PodDisruptionBudget"):
            continue
        if kind == "ConfigMap":
            doc = copy.deepcopy(doc)
            if doc["metadata"]["name"] == "replog-names":
                assert set(doc["data"]) == set(PODMAN_NAMES), "names.yaml changed: update PODMAN_NAMES"
                doc["data"] = dict(PODMAN_NAMES)
            played.append(doc)
        elif kind == "StatefulSet":
            for ordinal in range(doc["spec"]["replicas"]):
                name = f"{doc['metadata']['name']}-{ordinal}"
                claims = []
                for template in doc["spec"].get("volumeClaimTemplates", []):
                    claim = f"{template['metadata']['name']}-{name}"
                    played.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
                                   "spec": template["spec"]})
                    volumes.append(claim)
                    claims.append({"name": template["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim}})
                played.append(_pod(name, doc["spec"]["template"], claims, secret_files, host_dir))
                pods[name] = _container(name, doc)
        elif kind == "Deployment":
            name = doc["metadata"]["name"]
            played.append(_pod(name, doc["spec"]["template"], [], secret_files, host_dir))
            pods[name] = _container(name, doc)
        else:
            raise AssertionError(f"no translation for {kind} {doc['metadata']['name']}")
    return played, pods, volumes


def _container(pod: str, workload: dict) -> str:
    """podman names a pod's container `<pod>-<container>`."""
    return f"{pod}-{workload['spec']['template']['spec']['containers'][0]['name']}"


def _pod(name: str, template: dict, claims: list[dict], secret_files: Path, host_dir: Path) -> dict:
    spec = copy.deepcopy(template["spec"])
    spec["hostname"] = name
    for container in spec["containers"]:
        container.pop("ports", None)
    user = spec.get("securityContext", {}).get("runAsUser", 0)
    group = spec.get("securityContext", {}).get("runAsGroup", user)
    volumes = []
    for volume in spec.get("volumes", []):
        if "secret" in volume:
            directory = host_dir / name / volume["name"]
            _secret_files(secret_files / volume["secret"]["secretName"], volume["secret"].get("items"), directory,
                          user, group)
            volumes.append({"name": volume["name"], "hostPath": {"path": str(directory), "type": "Directory"}})
        else:
            volumes.append(volume)
    spec["volumes"] = volumes + claims
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": dict(template["metadata"].get("labels", {}))}, "spec": spec}


def _secret_files(source: Path, items, directory: Path, user: int, group: int) -> None:
    directory.mkdir(parents=True)
    chosen = [(item["key"], item["path"]) for item in items] if items else [(p.name, p.name) for p in source.iterdir()]
    for key, path in chosen:
        target = directory / path
        shutil.copyfile(source / key, target)
        target.chmod(0o400)
        os.chown(target, user, group)
    directory.chmod(0o500)
    os.chown(directory, user, group)


def write(documents: list[dict], path: Path) -> Path:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path
