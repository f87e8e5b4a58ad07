"""Which distribution ships which module: the client wheel is whole by itself.

The source tree keeps every shared module in `libs/common/src/replog/common`, and the generated protocol
code (`replog.v1`) is made from `protos/` at build time, never committed. An installed client must not
need the services' dependencies (kazoo, Prometheus, OpenTelemetry's exporters, pyarrow, PySpark), nor a
`replog-common` wheel that no package index has. So, as Kafka ships its protocol, record format and
network code in `kafka-clients` (which the broker depends on), the wheels split the shared code:

- `replog-client` ships `replog.client`, `replog.cli`, and every `replog` module they import, directly or
  not, at module level or inside a function (their import closure): the protocol modules they use, the
  record batch format, channels, TLS files, ...;
- `replog-common` ships every other module of `libs/common/src` and of the generated code, and depends on
  `replog-client` for the rest.

The closure is computed from the sources (`ast`), so a new import moves a module into the client wheel
by itself; nothing here lists modules by hand. The client's own third-party imports must be dependencies
of `replog-client` (tests/unit/test_packaging.py checks it). A `replog` import the closure cannot find in
the client's or common's sources (a service's module, say) is an error: the client never imports a service.

Pure: reads files, runs nothing. deploy/packaging/build_dists.py uses it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

CLIENT_ROOTS = ("replog.client", "replog.cli")


class PartitionError(Exception):
    """The client imports a module that neither the client's nor the shared sources hold."""


@dataclass(frozen=True)
class Module:
    name: str          # dotted: replog.common.records.batch
    path: Path         # its file
    root: Path         # the source root it lies under (the folder holding `replog/`)

    @property
    def relative(self) -> Path:
        return self.path.relative_to(self.root)

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def modules_under(root: Path) -> dict[str, Module]:
    """Every Python module below `root/replog`, by dotted name (stubs and data files are not modules)."""
    found = {}
    for path in sorted(Path(root, "replog").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = Module(".".join(parts), path, Path(root))
    return found


def imported_names(module: Module, *, module_level_only: bool = False) -> set[str]:
    """Every module name `module` imports, absolute or relative, with each `from X import y` also naming
    `X.y` (it may be a submodule). Anywhere in its body, or with `module_level_only` only the imports
    that run when it is imported (not those inside a function, which load an optional feature lazily)."""
    tree = ast.parse(module.path.read_text(), str(module.path))
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    nodes = _module_level(tree) if module_level_only else ast.walk(tree)
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _module_level(tree: ast.Module):
    """The statements that run at import: the body and what nests in if/try/with blocks, not functions
    or classes."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(node.body)


def _with_parents(name: str) -> list[str]:
    """`a.b.c` imports `a`, `a.b` and `a.b.c`: a submodule's import runs its packages' __init__ first."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def client_closure(available: dict[str, Module]) -> set[str]:
    """The `replog` modules the client's packages need: CLIENT_ROOTS, every module below them, and all
    they import (transitively)."""
    todo = [name for name in available if any(name == r or name.startswith(r + ".") for r in CLIENT_ROOTS)]
    closure: set[str] = set()
    while todo:
        name = todo.pop()
        if name in closure:
            continue
        closure.add(name)
        for imported in imported_names(available[name]):
            if imported.split(".")[0] != "replog":
                continue
            for candidate in _with_parents(imported):
                if candidate in available:
                    todo.append(candidate)
                elif any(other.startswith(candidate + ".") for other in available):
                    continue  # a namespace package (`replog`, `replog.v1`): no file of its own
                elif candidate == imported and imported.rpartition(".")[0] in available:
                    continue  # `from pkg import name`: a name defined in pkg, not a module
                else:
                    raise PartitionError(f"{available[name].path} imports {imported}, which is neither the client's "
                                         "nor a shared module: the client wheel cannot ship it")
    return closure


def third_party_imports(modules: list[Module], *, module_level_only: bool = False) -> set[str]:
    """The top-level names of what `modules` import from outside `replog` and the standard library."""
    import sys

    names = set()
    for module in modules:
        for imported in imported_names(module, module_level_only=module_level_only):
            top = imported.split(".")[0]
            if top and top != "replog" and top not in sys.stdlib_module_names and top != "__future__":
                names.add(top)
    return names
