"""Statements of the hand-written docs that the code can confirm: what `make setup` installs, which
distribution depends on what, the export schema the Spark jobs read, and what a group consumer offers.
Each test fails when the code moves and the sentence does not (or the other way round)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def _dependencies(folder: str) -> list[str]:
    project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]
    return [re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0] for d in project.get("dependencies", [])]


def test_the_readme_names_every_debian_package_setup_installs():
    script = (REPO / "deploy" / "local" / "scripts" / "install-system-deps.sh").read_text()
    installed = set(re.findall(r"need\+=\(([\w.+-]+)\)", script))
    named = re.search(r"`apt-get install ([^`]+)`", README)
    assert installed and named, "no package list in the script or no apt-get line in the README"
    assert installed == set(named.group(1).split())


SERVICES = {"services/broker": "replog.broker", "services/controller": "replog.controller",
            "services/admin-gateway": "replog.gateway"}


def test_the_services_depend_only_on_common_and_pyarrow_is_a_client_extra():
    for folder, package in SERVICES.items():
        assert _dependencies(folder) == ["replog-common"], folder
        sources = " ".join(p.read_text() for p in (REPO / folder / "src").rglob("*.py"))
        for other in set(SERVICES.values()) - {package}:
            assert not re.search(rf"\b(from|import) {re.escape(other)}\b", sources), (folder, other)
    project = tomllib.loads((REPO / "libs/client/pyproject.toml").read_text())["project"]
    assert any(d.startswith("pyarrow") for d in project["optional-dependencies"]["parquet"])
    assert "pyarrow" not in _dependencies("libs/client")
    assert "The broker, the controller and the gateway depend only\non `replog-common`" in README
    assert "pyarrow is the client's optional `parquet` extra" in " ".join(README.split())


def test_the_spark_docs_name_the_export_schema_version_and_tables():
    from replog.common import export_schema

    numbers = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    spark_readme = (REPO / "spark" / "README.md").read_text()
    assert f"version {export_schema.SCHEMA_VERSION}: {numbers[len(export_schema.TABLES)]} tables" in spark_readme
    source = (REPO / "spark" / "src" / "replog" / "spark" / "source.py").read_text()
    assert " | ".join(export_schema.TABLES) in " ".join(source.split())
    for path in sorted((REPO / "spark" / "src").rglob("*.py")):
        text = " ".join(path.read_text().split())
        where = path.relative_to(REPO)
        assert {int(v) for v in re.findall(r"schema version (\d+)", text)} <= {export_schema.SCHEMA_VERSION}, where
        for count, names in re.findall(r"\b(two|three|four|five|six|seven) tables \(([^)]*)\)", text):
            assert count == numbers[len(export_schema.TABLES)], where
            assert names.split(", ") == list(export_schema.TABLES), where


def test_the_client_guide_says_what_a_group_consumer_offers():
    from replog.client import GroupConsumer

    guide = (REPO / "docs" / "clients.md").read_text()
    says_not_iterable = "a group consumer cannot be iterated" in " ".join(guide.split())
    assert says_not_iterable == (not hasattr(GroupConsumer, "__iter__"))
