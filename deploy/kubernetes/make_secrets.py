"""Certificates and ZooKeeper credentials for the manifests in this folder, as Kubernetes Secrets.

    python deploy/kubernetes/make_secrets.py --out DIR [--namespace replog] [--brokers 3]
    kubectl apply -f DIR/secrets.yaml

Needs only the client's wheel (`pip install replog_client-*.whl`): it drives what `replog certs` and
`replog zk-credentials` do. DIR keeps the CA (`ca/ca.pem`, `ca/ca.key`: keep the key private, it is not
in any Secret) and every file of every Secret under `files/<secret>/`; run it again to add brokers (the CA,
certificates and passwords already there are kept). Each certificate names its process (replog://broker/0)
and the DNS names it is reached at: the pod's name through its headless Service for a broker, the Service
for a controller or the gateway, in every form a resolver may be given (full, `.svc`, the namespace's
short form, and the bare pod or Service name, which `podman kube play` resolves), plus localhost and
127.0.0.1 for the probes. `replog-operator-tls` is the operator's (replog://user/admin) for clients.
"""

from __future__ import annotations

import argparse
import base64
import shutil
import sys
from pathlib import Path

from replog.common.security.certificates import authority_from_files, issue, new_authority
from replog.common.security.principal import Principal
from replog.common.zk import credentials_files

CONTROLLERS = (1, 2)
PROBE_HOSTS = ("localhost", "127.0.0.1")


def dns_forms(name: str, namespace: str, domain: str) -> list[str]:
    """`name` (a Service, or pod.headless-service) in every form a pod's resolver may be given."""
    return [f"{name}.{namespace}.svc.{domain}", f"{name}.{namespace}.svc", f"{name}.{namespace}", name]


def identities(namespace: str, domain: str, brokers: int) -> dict[str, list[tuple[Principal, list[str]]]]:
    """By Secret: the principals whose certificate it holds, with their hosts."""
    return {
        "replog-broker-tls": [(Principal("broker", str(n)), [*dns_forms(f"replog-broker-{n}.replog-broker", namespace,
                                                                         domain), f"replog-broker-{n}", *PROBE_HOSTS])
                              for n in range(brokers)],
        "replog-controller-tls": [(Principal("controller", str(i)),
                                   [*dns_forms(f"replog-controller-{i}", namespace, domain), *PROBE_HOSTS])
                                  for i in CONTROLLERS],
        "replog-gateway-tls": [(Principal("gateway", "1"), [*dns_forms("replog-gateway", namespace, domain),
                                                            *PROBE_HOSTS])],
        "replog-operator-tls": [(Principal("user", "admin"), [])],
    }


def make(out: Path, namespace: str, domain: str, brokers: int) -> Path:
    ca_dir = out / "ca"
    if (ca_dir / "ca.pem").exists():
        authority = authority_from_files(ca_dir / "ca.pem", ca_dir / "ca.key")
    else:
        authority = new_authority(ca_dir, f"replog CA ({namespace})")
    secrets: dict[str, Path] = {}
    for secret, members in identities(namespace, domain, brokers).items():
        directory = secrets[secret] = out / "files" / secret
        for principal, hosts in members:
            if not (directory / f"{principal.kind}-{principal.name}.pem").exists():
                issue(authority, principal, directory, hosts=hosts)
        shutil.copyfile(ca_dir / "ca.pem", directory / "ca.pem")
    zk = out / "zookeeper-credentials"
    credentials_files.write_all(zk, [str(n) for n in range(brokers)])
    for secret, names in {"replog-broker-zookeeper": [f"broker-{n}" for n in range(brokers)],
                          "replog-controller-zookeeper": ["controller"], "replog-gateway-zookeeper": ["gateway"],
                          "replog-zookeeper-credentials": [credentials_files.SUPER_DIGEST_FILE]}.items():
        directory = secrets[secret] = out / "files" / secret
        directory.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copyfile(zk / name, directory / name)
            (directory / name).chmod(0o600)
    manifest = out / "secrets.yaml"
    manifest.write_text("".join(secret_manifest(name, directory, namespace) for name, directory in secrets.items()))
    manifest.chmod(0o600)
    return manifest


def secret_manifest(name: str, directory: Path, namespace: str) -> str:
    lines = ["---", "apiVersion: v1", "kind: Secret", "metadata:", f"  name: {name}", f"  namespace: {namespace}",
             "  labels: {app.kubernetes.io/part-of: replog}", "type: Opaque", "data:"]
    for path in sorted(directory.iterdir()):
        lines.append(f"  {path.name}: {base64.b64encode(path.read_bytes()).decode()}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory for the CA, the files and secrets.yaml")
    parser.add_argument("--namespace", default="replog", help="the namespace of the manifests (default replog)")
    parser.add_argument("--cluster-domain", default="cluster.local", help="the cluster's DNS domain")
    parser.add_argument("--brokers", type=int, default=3, help="the broker StatefulSet's replicas (default 3)")
    args = parser.parse_args(argv)
    if args.brokers < 1:
        parser.error("--brokers must be 1 or more")
    print(make(Path(args.out), args.namespace, args.cluster_domain, args.brokers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
