"""The controller core's contract: stricter purity, theories of operation, error codes.

``tests/unit/test_core_purity.py`` bans I/O libraries in every core; the
controller core is held to more (its issue): no clock, threads, global random,
OS or file access either, so that a seeded simulation reproduces it exactly.
"""

import ast
import pathlib

import replog.controller.core as core
from replog.common.errors import check_mirror
from replog.controller.core.errors import ErrorCode
from replog.v1 import common_pb2

CORE = pathlib.Path(core.__file__).parent
FORBIDDEN = {"threading", "time", "random", "os", "io", "pathlib", "shutil", "asyncio",
             "multiprocessing", "logging", "datetime"}


def _imports(path):
    """Modules imported at run time (``if TYPE_CHECKING:`` blocks are only for annotations)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0]


def test_core_imports_nothing_that_does_io_or_reads_a_clock():
    offenders = {
        f"{path.relative_to(CORE)}: {name}"
        for path in CORE.rglob("*.py")
        for name in _imports(path)
        if name in FORBIDDEN
    }
    assert not offenders


def test_every_core_module_opens_with_a_theory_of_operation():
    for path in CORE.rglob("*.py"):
        if path.name == "__init__.py":
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring and "Theory of operation" in docstring, path.name


def test_error_codes_mirror_the_proto():
    check_mirror(ErrorCode)  # every core code exists in the proto with the same number
    assert len(ErrorCode) == len(common_pb2.ErrorCode.keys())  # and none is missing
