"""`make dist`'s wheels as a user gets them: the client's wheel installed alone into a fresh virtualenv
outside the repository gives a working client and CLI, with none of the services' dependencies."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ["libs/common", "libs/client", "services/broker", "services/controller", "services/admin-gateway",
           "deploy/local", "spark"]
SERVER_ONLY = {"replog-common", "grpcio-reflection", "kazoo", "prometheus-client", "pyspark", "pyarrow", "tenacity",
               "opentelemetry-exporter-otlp-proto-grpc"}
# Their import names: none may be loaded by importing the client and the CLI.
SERVER_ONLY_IMPORTS = ("grpc_reflection", "kazoo", "prometheus_client", "pyspark", "pyarrow", "tenacity",
                       "opentelemetry.exporter")
# Files of modules only a server runs (tests/unit/test_packaging.py checks every one from the sources).
SERVER_FILES = ("replog/common/grpc_server.py", "replog/common/edge/", "replog/common/acls/",
                "replog/common/security/authorization.py", "replog/common/metrics/", "replog/common/zk/client.py")


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
    return result


@pytest.fixture(scope="module")
def scratch():
    """A directory outside the repository (and outside pytest's tmp tree), removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="replog-dist-test-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def wheels(scratch):
    out = scratch / "dist"
    run([sys.executable, str(REPO / "deploy" / "packaging" / "build_dists.py"), "--out", str(out), *FOLDERS])
    return sorted(out.glob("*.whl"))


@pytest.fixture(scope="module")
def client_venv(scratch, wheels):
    venv = scratch / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    client = [w for w in wheels if "client" in w.name]
    assert len(client) == 1, wheels
    run([str(venv / "bin" / "pip"), "install", "--quiet", str(client[0])], cwd=scratch)
    return venv


def clean_env() -> dict[str, str]:
    """No repository on the path and no cluster's state to fall back on."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "REPLOG_", "VIRTUAL_ENV"))}


def test_every_distribution_has_a_wheel_with_its_generated_code(wheels):
    names = {w.name.split("-")[0] for w in wheels}
    assert names == {"replog_common", "replog_client", "replog_broker", "replog_controller", "replog_gateway",
                     "replog_devcluster", "replog_spark"}
    shipped = {n for w in wheels for n in zipfile.ZipFile(w).namelist()}
    for proto in (REPO / "protos" / "replog" / "v1").glob("*.proto"):
        assert f"replog/v1/{proto.stem}_pb2.py" in shipped, proto.name


def test_the_client_wheel_alone_gives_the_client_and_the_cli(client_venv, scratch):
    bin_dir = client_venv / "bin"
    version = run([str(bin_dir / "replog"), "--version"], cwd=scratch, env=clean_env()).stdout.strip()
    assert version == "replog-client 0.1.0"
    code = ("import importlib, pkgutil, replog.client, replog.cli\n"
            "for package in (replog.client, replog.cli):\n"
            "    for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
            "        importlib.import_module(info.name)\n"
            "print(replog.client.__file__)")
    where = run([str(bin_dir / "python"), "-c", code], cwd=scratch, env=clean_env()).stdout.strip()
    assert where.startswith(str(client_venv)), where
    code = ("import sys, replog.client, replog.cli.main\n"
            f"print(sorted(m for m in sys.modules if m.startswith({SERVER_ONLY_IMPORTS!r})))")
    loaded = run([str(bin_dir / "python"), "-c", code], cwd=scratch, env=clean_env()).stdout.strip()
    assert loaded == "[]", f"importing the client loads the services' {loaded}"
    installed = run([str(bin_dir / "pip"), "list", "--format", "freeze"], env=clean_env()).stdout
    names = {line.split("==")[0].lower() for line in installed.splitlines()}
    assert not names & SERVER_ONLY, names & SERVER_ONLY


def test_the_client_wheel_ships_no_server_module_and_requires_no_server_package(wheels):
    client = next(w for w in wheels if "client" in w.name)
    with zipfile.ZipFile(client) as archive:
        files = archive.namelist()
        metadata = next(archive.read(n).decode() for n in files if n.endswith(".dist-info/METADATA"))
    assert "replog/client/__init__.py" in files and "replog/common/channels.py" in files
    shipped = [f for f in files if f.startswith(SERVER_FILES)]
    assert not shipped, f"the client wheel ships server modules {shipped}"
    requirements = [Requirement(line.partition(":")[2]) for line in metadata.splitlines()
                    if line.startswith("Requires-Dist:")]
    required = {canonicalize_name(r.name) for r in requirements if r.marker is None}  # extras have a marker
    assert required and not required & SERVER_ONLY, required & SERVER_ONLY


def test_a_missing_extra_is_one_clear_line(client_venv, scratch):
    done = subprocess.run([str(client_venv / "bin" / "replog"), "--gateway", "127.0.0.1:1", "--insecure", "export",
                           "--format", "parquet", "--out", str(scratch / "export")],
                          capture_output=True, text=True, timeout=60, cwd=scratch, env=clean_env())
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'replog-client[parquet]'" in done.stderr
