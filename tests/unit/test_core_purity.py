"""The pure cores (every package named `core`) import no I/O library.

Decisions live in cores that can be run in a simulation;
gRPC, ZooKeeper, Spark, sockets and subprocesses stay in adapters. Checked two
ways: statically over the source, and by importing every core module in a fresh
interpreter where those modules cannot be imported at all.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("grpc", "kazoo", "pyspark", "socket", "subprocess")


def core_files() -> list[Path]:
    roots = [REPO / "libs", REPO / "services", REPO / "spark"]
    return sorted(
        path
        for root in roots if root.exists()
        for core in root.rglob("core") if core.is_dir() and ".venv" not in core.parts
        for path in core.rglob("*.py")
    )


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts  # the checkout's own directory may be named replog
    start = parts.index("replog")
    names = list(parts[start:])
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def test_there_are_cores_to_check():
    assert core_files(), "no core packages found; the purity rule would check nothing"


def test_core_sources_import_no_io_library():
    offenders = []
    for path in core_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in FORBIDDEN:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} imports {name}")
    assert not offenders, "core modules import I/O libraries:\n" + "\n".join(offenders)


def test_core_modules_load_with_io_libraries_blocked():
    modules = sorted({module_name(p) for p in core_files()})
    script = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        FORBIDDEN = {FORBIDDEN!r}
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in FORBIDDEN:
                    raise ImportError(f"core imported {{name}} (forbidden in a core)")
                return None
        for name in FORBIDDEN:
            sys.modules.pop(name, None)
        sys.meta_path.insert(0, Block())
        for module in {modules!r}:
            importlib.import_module(module)
        print("imported", len({modules!r}))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
