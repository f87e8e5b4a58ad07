"""`make dist`: one wheel per distribution in `dist/`, each with the generated protocol code it needs.

The protocol code (`replog.v1`) is generated here from `protos/`, at build time, rather than committed:
several people change the protos at once, and generated files in git would conflict on every merge
while adding nothing the protos do not say. The wheels are built from a staged copy of each folder
(under a temporary directory, removed afterwards), never from the working tree's own generated files,
so a clean checkout builds the same wheels as a developer's. partition.py decides which modules each
wheel ships: the client wheel is whole by itself (`pip install dist/replog_client-*.whl` needs only
PyPI's packages) and `replog-common` ships the rest.

Usage: build_dists.py --out dist FOLDER...   (the folders of the distributions, as the Makefile's DISTS)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from partition import Module, client_closure, modules_under  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CLIENT, COMMON = "libs/client", "libs/common"
GENERATED_PACKAGE = Path("replog", "v1")
SKIPPED = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc", "build")


class BuildError(Exception):
    pass


def generate_protocol(out: Path) -> None:
    """The protos as Python modules, type stubs and gRPC stubs below `out/replog/v1`."""
    protos = sorted(str(p.relative_to(REPO / "protos")) for p in (REPO / "protos" / GENERATED_PACKAGE).glob("*.proto"))
    (out / GENERATED_PACKAGE).mkdir(parents=True)
    result = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{REPO / 'protos'}", f"--python_out={out}",
                             f"--pyi_out={out}", f"--grpc_python_out={out}", *protos],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"protoc failed: {result.stderr.strip()}")


def _copy_module(module: Module, into: Path) -> None:
    """Copy a module's file, and its type stub if it has one, to the same place below `into`."""
    for source in (module.path, module.path.with_suffix(".pyi")):
        if source.exists():
            target = into / source.relative_to(module.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def stage(folders: list[str], scratch: Path) -> dict[str, Path]:
    """A copy of each folder to build from, with the modules partition.py gives it; by folder."""
    generated = scratch / "generated"
    generate_protocol(generated)
    client_src, common_src = REPO / CLIENT / "src", REPO / COMMON / "src"
    shared = {name: m for name, m in modules_under(common_src).items() if not name.startswith("replog.v1")}
    protocol = modules_under(generated)
    available = {**modules_under(client_src), **shared, **protocol}
    closure = client_closure(available)
    staged = {}
    for folder in folders:
        target = scratch / "stage" / folder
        shutil.copytree(REPO / folder, target, ignore=SKIPPED)
        if folder == COMMON:
            shutil.rmtree(target / "src" / GENERATED_PACKAGE, ignore_errors=True)  # make proto's, if any
            for name in closure & shared.keys():
                for suffix in (".py", ".pyi"):
                    (target / "src" / shared[name].relative).with_suffix(suffix).unlink(missing_ok=True)
            for name, module in protocol.items():
                if name not in closure:
                    _copy_module(module, target / "src")
        elif folder == CLIENT:
            for name in sorted(closure - modules_under(client_src).keys()):
                _copy_module(available[name], target / "src")
        staged[folder] = target
    return staged


def build(folders: list[str], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="replog-dist-") as scratch:
        staged = stage(folders, Path(scratch))
        wheel_dir = Path(scratch) / "wheels"
        # One pip for all of them: pip's own start-up cost several seconds a wheel.
        result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                                 "--quiet", "--wheel-dir", str(wheel_dir), *map(str, staged.values())],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"building the wheels of {', '.join(staged)} failed:\n{result.stdout}{result.stderr}")
        wheels = sorted(wheel_dir.glob("*.whl"))
        check_disjoint(wheels)
        built = []
        for wheel in wheels:
            for old in out.glob(wheel.name.split("-")[0] + "-*.whl"):
                old.unlink()  # a wheel of an earlier version of the same distribution
            built.append(Path(shutil.copy2(wheel, out / wheel.name)))
        return built


def check_disjoint(wheels: list[Path]) -> None:
    """No two wheels ship the same file: one owner per module, so installing or removing one wheel
    never overwrites or deletes another's."""
    owner: dict[str, str] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if ".dist-info/" in name:
                    continue
                if name in owner:
                    raise BuildError(f"{name} is in both {owner[name]} and {wheel.name}")
                owner[name] = wheel.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build_dists.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "dist"), help="folder for the wheels (default dist/)")
    parser.add_argument("folders", nargs="+", help="the distributions' folders, relative to the repository")
    args = parser.parse_args(argv)
    try:
        for wheel in build(args.folders, Path(args.out)):
            print(wheel.relative_to(REPO) if wheel.is_relative_to(REPO) else wheel)
    except BuildError as exc:
        print(f"make dist: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
