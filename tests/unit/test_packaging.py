"""The wheels' contract, read from the sources (deploy/packaging/partition.py): the client imports no
service and no server module, its module-level third-party imports are dependencies of replog-client and
none of the services' own, its grpcio and protobuf floors cover the generated code, and every distribution
has one version."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ["libs/common", "libs/client", "services/broker", "services/controller", "services/admin-gateway",
           "deploy/local", "spark"]
# A top-level import name and the distribution that provides it.
PROVIDERS = {"google": "protobuf", "grpc": "grpcio", "grpc_health": "grpcio-health-checking",
             "grpc_reflection": "grpcio-reflection", "crc32c": "crc32c", "cryptography": "cryptography",
             "rich": "rich", "opentelemetry": "opentelemetry-sdk", "pyarrow": "pyarrow", "kazoo": "kazoo",
             "prometheus_client": "prometheus-client", "tenacity": "tenacity", "zstandard": "zstandard",
             "lz4": "lz4", "cramjam": "cramjam"}
# What only a server runs (serving, admitting and authorizing calls, ACLs, metrics, ZooKeeper sessions): an
# import from the client into any of these would put it, and its dependencies, into the client's wheel.
SERVER_MODULES = ("replog.common.grpc_server", "replog.common.edge", "replog.common.acls",
                  "replog.common.security.authorization", "replog.common.security.rules",
                  "replog.common.handler_wrapping", "replog.common.refusal_log", "replog.common.metrics",
                  "replog.common.service", "replog.common.quotas", "replog.common.topic_admin",
                  "replog.common.zk.client", "replog.common.zk.session")


def partition():
    spec = importlib.util.spec_from_file_location("partition", REPO / "deploy" / "packaging" / "partition.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("partition", module)
    spec.loader.exec_module(module)
    return module


def project(folder: str) -> dict:
    return tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


@pytest.fixture(scope="module")
def closure():
    p = partition()
    available = {**p.modules_under(REPO / "libs" / "client" / "src"), **p.modules_under(REPO / "libs" / "common" / "src")}
    assert any(name.startswith("replog.v1.") for name in available), "run make proto first"
    return p, available, p.client_closure(available)


def test_the_client_needs_no_service_and_ships_the_modules_it_imports(closure):
    _, _, names = closure
    assert {"replog.client", "replog.cli.main", "replog.common.records", "replog.v1.log_pb2"} <= names
    assert not [n for n in names if n.split(".")[1] in ("broker", "controller", "gateway", "devcluster", "spark")]
    assert "replog.common.zk.client" not in names  # kazoo is the services' alone


def test_every_import_the_client_runs_at_load_is_a_dependency_of_its_wheel(closure):
    p, available, names = closure
    imported = p.third_party_imports([available[n] for n in names], module_level_only=True)
    unknown = imported - PROVIDERS.keys()
    assert not unknown, f"name the distribution of {unknown} in PROVIDERS"
    declared = requirement_names(project("libs/client")["dependencies"])
    missing = {PROVIDERS[name] for name in imported} - declared
    assert not missing, f"replog.client or a module it imports needs {missing}: add to libs/client/pyproject.toml"


def test_the_client_wheel_depends_on_no_server_only_package():
    server_only = {name for folder in ("libs/common", "spark")
                   for name in requirement_names(project(folder)["dependencies"]) if not name.startswith("replog-")}
    assert {"grpcio-reflection", "kazoo", "prometheus-client", "tenacity", "pyspark"} <= server_only
    declared = requirement_names(project("libs/client")["dependencies"])
    assert "replog-common" not in declared
    assert not declared & server_only, f"libs/client/pyproject.toml declares the services' {declared & server_only}"


def test_the_client_wheel_ships_no_server_module(closure):
    _, _, names = closure
    shipped = sorted(n for n in names if any(n == s or n.startswith(s + ".") for s in SERVER_MODULES))
    assert not shipped, f"the client imports server modules {shipped}: move what it needs out of them"


def test_the_shared_modules_the_client_does_not_ship_have_their_imports_declared_by_replog_common(closure):
    p, available, names = closure
    services_only = [m for name, m in available.items() if name not in names and name.startswith("replog.common.")]
    imported = p.third_party_imports(services_only, module_level_only=True)
    unknown = imported - PROVIDERS.keys()
    assert not unknown, f"name the distribution of {unknown} in PROVIDERS"
    declared = requirement_names(project("libs/common")["dependencies"]) | requirement_names(
        project("libs/client")["dependencies"])
    missing = {PROVIDERS[name] for name in imported} - declared
    assert not missing, f"replog-common's modules need {missing}: add to libs/common/pyproject.toml"


def test_lazy_imports_of_the_client_are_its_dependencies_extras_or_server_paths(closure):
    p, available, names = closure
    lazy = p.third_party_imports([available[n] for n in names]) - p.third_party_imports(
        [available[n] for n in names], module_level_only=True)
    extras = {name for reqs in project("libs/client").get("optional-dependencies", {}).values()
              for name in requirement_names(reqs)}
    declared = requirement_names(project("libs/client")["dependencies"])  # imported when first used (codecs)
    # prometheus_client: telemetry.start_metrics_server; kazoo: zk.auth.kazoo_acl; only services call them.
    assert {PROVIDERS[name] for name in lazy} - extras - declared <= {"prometheus-client", "kazoo"}


def generated_version(pattern: str, file: str) -> tuple[int, ...]:
    text = (REPO / "libs" / "common" / "src" / "replog" / "v1" / file).read_text()
    return tuple(int(x) for x in re.search(pattern, text).group(1).split("."))


def floor(requirement_name: str) -> tuple[int, ...]:
    for requirement in project("libs/client")["dependencies"]:
        match = re.fullmatch(rf"{requirement_name}>=([\d.]+)(,.*)?", requirement)
        if match:
            return tuple(int(x) for x in match.group(1).split("."))
    raise AssertionError(f"libs/client/pyproject.toml has no {requirement_name}>= floor")


def test_the_client_floors_cover_the_generated_code():
    assert floor("protobuf") >= generated_version(r"# Protobuf Python Version: ([\d.]+)", "log_pb2.py")
    assert floor("grpcio") >= generated_version(r"GRPC_GENERATED_VERSION = '([\d.]+)'", "log_pb2_grpc.py")


def test_every_distribution_has_one_version_and_its_wheel_is_built_by_make_dist():
    versions = {folder: project(folder)["version"] for folder in FOLDERS}
    assert len(set(versions.values())) == 1, versions
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^DISTS := " + re.escape(" ".join(FOLDERS)) + "$", makefile, flags=re.MULTILINE)


def test_every_direct_dependency_of_the_services_is_pinned_within_its_range():
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (REPO / "deploy" / "packaging" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version
    for folder in ("libs/client", "libs/common", "services/broker", "services/controller", "services/admin-gateway"):
        for text in project(folder)["dependencies"]:
            requirement = Requirement(text)
            name = canonicalize_name(requirement.name)
            if name.startswith("replog-"):
                continue
            assert name in pins, f"{folder} needs {name}, which deploy/packaging/constraints.txt does not pin: " \
                                 "run make constraints"
            assert requirement.specifier.contains(pins[name], prereleases=True), \
                f"{name}=={pins[name]} is outside {folder}'s {requirement}: run make constraints"


PROGRAMS = [(script, target, project(folder)["name"], project(folder)["version"])
            for folder in FOLDERS for script, target in project(folder).get("scripts", {}).items()]


@pytest.mark.parametrize("script, target, distribution, version", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_every_program_prints_its_distribution_and_version(script, target, distribution, version, capsys):
    """What an operator checks first on a host or in an image: which release this program is."""
    module, function = target.split(":")
    with pytest.raises(SystemExit) as exit_:
        getattr(importlib.import_module(module), function)(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"{distribution} {version}"


def test_the_healthcheck_help_says_all_it_checks(capsys):
    from replog.common import healthcheck

    with pytest.raises(SystemExit):
        healthcheck.main(["--help"])
    described = " ".join(capsys.readouterr().out.split())
    assert "Exit 0 if its gRPC health service says SERVING, 1 otherwise" in described
    assert "exit 0 whenever the service answers at all" in described
