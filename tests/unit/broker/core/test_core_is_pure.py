"""The broker core does no I/O and reads no clock or randomness (time and randomness come in from outside)."""

import ast
from pathlib import Path

import replog.broker.core as core

FORBIDDEN_MODULES = {
    "grpc", "kazoo", "pyspark", "socket", "subprocess", "threading", "multiprocessing",
    "asyncio", "os", "io", "pathlib", "shutil", "time", "datetime", "random", "select",
}
FORBIDDEN_CALLS = {"open", "print", "input"}


def core_modules() -> list[Path]:
    (package_dir,) = core.__path__
    return sorted(Path(package_dir).rglob("*.py"))


def test_core_has_modules():
    assert len(core_modules()) >= 5


def test_core_imports_nothing_impure():
    offenders = []
    for path in core_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            offenders += [(path.name, n) for n in names if n.split(".")[0] in FORBIDDEN_MODULES]
    assert offenders == []


def test_core_calls_no_io_builtins():
    offenders = []
    for path in core_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
                offenders.append((path.name, node.func.id, node.lineno))
    assert offenders == []


def test_every_core_module_opens_with_a_theory_of_operation():
    missing = [p.name for p in core_modules() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []
