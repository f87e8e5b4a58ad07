"""The gateway runs without the controller installed: it shares the domain through replog.common only."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[3] / "services" / "admin-gateway"


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_no_gateway_module_imports_the_controller():
    sources = sorted((GATEWAY / "src").rglob("*.py"))
    assert sources
    offenders = {str(p.relative_to(GATEWAY)): sorted(m for m in imported_modules(p) if m.startswith("replog.controller"))
                 for p in sources}
    assert {p: m for p, m in offenders.items() if m} == {}


def test_the_gateway_distribution_does_not_depend_on_the_controller():
    project = tomllib.loads((GATEWAY / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("replog-controller")]
