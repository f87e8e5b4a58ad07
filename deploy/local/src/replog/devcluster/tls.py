"""A local cluster's certificates: made once under `<state-dir>/tls` when its processes are planned.

One CA (or a CA given by the spec, so that many test clusters share one), one certificate per
process naming it (`replog://broker/2`, valid for 127.0.0.1 and localhost, and in the multi-host layout
for its host's address too), the operator's (`replog://user/admin`) for the CLI, tests and health
checks, and `tls/env` exporting REPLOG_TLS_* for other tools. The layout is security/local.py's. A
cluster started insecure gets the marker file instead, so that clients pointed at its state directory
know to speak plaintext.

Each ZooKeeper server gets a certificate of the same CA (`zookeeper.pem`, or `zookeeper-2.pem` in an
ensemble), valid for its addresses and naming no replog identity, and `<name>-keystore.pem`, its key
and certificate in one file, as ZooKeeper's PEM key store reads them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from replog.common.security import local
from replog.common.security.certificates import LOCAL_HOSTS, issue, load_authority, new_authority
from replog.common.security.files import TlsFiles
from replog.common.security.principal import Principal
from replog.devcluster.zookeeper import ServerTls

CA_DIR_ENV = "REPLOG_LOCAL_CA_DIR"  # ClusterSpec.ca_dir's default


def prepare(state_dir: Path, processes: list[tuple[str, str]], ca_dir: str = "",
            addresses: dict[tuple[str, str], str] | None = None, zookeepers: dict[str, str] | None = None) -> None:
    """Make the CA (or copy the one in `ca_dir`) and a certificate for each (role, id) in `processes`
    and for the operator; files already there are kept. A process in `addresses` (the multi-host layout)
    has its host's address among its certificate's SANs too. `zookeepers`: the ZooKeeper servers to make
    certificates for, by name, with their address ("" for loopback only)."""
    addresses = addresses or {}
    directory = local.tls_dir(state_dir)
    directory.mkdir(parents=True, exist_ok=True)
    (Path(state_dir) / local.INSECURE_MARKER).unlink(missing_ok=True)  # left by an earlier insecure cluster
    if not (directory / "ca.pem").exists():
        if ca_dir:
            for name in ("ca.pem", "ca.key"):
                shutil.copyfile(Path(ca_dir) / name, directory / name)
            (directory / "ca.key").chmod(0o600)
        else:
            new_authority(directory)
    authority = load_authority(directory)
    for principal in [Principal(role, instance) for role, instance in processes] + [local.OPERATOR]:
        files = local.files_of(state_dir, principal)
        address = addresses.get((principal.kind, principal.name))
        if not Path(files.cert_file).exists() or (address and address not in _addresses_of(files.cert_file)):
            # A cluster whose first start was retried on a new network gets certificates for its new addresses.
            issue(authority, principal, directory, hosts=(*LOCAL_HOSTS, address) if address else LOCAL_HOSTS)
    for name, address in (zookeepers or {}).items():
        _prepare_zookeeper(authority, directory, name, address)
    (directory / local.ENV_FILE).write_text(local.env_exports(local.files_of(state_dir, local.OPERATOR)))


def _prepare_zookeeper(authority, directory: Path, name: str, address: str) -> None:
    cert_file = directory / f"{name}.pem"
    if cert_file.exists() and (not address or address in _addresses_of(str(cert_file))):
        return
    files = issue(authority, Principal("user", name), directory, stem=name, with_identity=False,
                  hosts=(*LOCAL_HOSTS, address) if address else LOCAL_HOSTS)
    keystore = directory / f"{name}-keystore.pem"
    keystore.touch(mode=0o600)
    keystore.write_bytes(Path(files.key_file).read_bytes() + Path(files.cert_file).read_bytes())


def zookeeper_server_tls(state_dir: Path, name: str) -> ServerTls:
    """The TLS files of ZooKeeper server `name`, made by `prepare`."""
    directory = local.tls_dir(state_dir)
    return ServerTls(str(directory / f"{name}-keystore.pem"), str(directory / "ca.pem"))


def _addresses_of(cert_file: str) -> set[str]:
    """The IP addresses a certificate is valid for (its SANs)."""
    from cryptography import x509

    certificate = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}


def mark_insecure(state_dir: Path) -> None:
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    (Path(state_dir) / local.INSECURE_MARKER).write_text("this cluster runs without TLS (replog-local up --insecure)\n")


def is_insecure(state_dir: Path) -> bool:
    return (Path(state_dir) / local.INSECURE_MARKER).exists()


def service_args(state_dir: Path, role: str, instance: int, insecure: bool, zookeeper_tls: bool = False) -> list[str]:
    """The TLS flags of one service process (`zookeeper_tls`: it reaches ZooKeeper over TLS, with its own files)."""
    if insecure:
        return ["--insecure", "true"]
    files = local.files_of(state_dir, Principal(role, str(instance)))
    return ["--tls-ca-file", files.ca_file, "--tls-cert-file", files.cert_file, "--tls-key-file", files.key_file,
            *(["--zookeeper-tls", "true"] if zookeeper_tls else [])]


def operator_files(state_dir: Path) -> TlsFiles | None:
    """What the operator (health checks, tests, the CLI) calls the cluster with; None when insecure."""
    return None if is_insecure(state_dir) else local.files_of(state_dir, local.OPERATOR)
