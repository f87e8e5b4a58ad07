"""`make constraints`: rewrite deploy/packaging/constraints.txt, the exact version of every third-party
package the services install (their dependencies, all the way down), as pip resolves them today.

The container image installs with these constraints, so two builds from one commit get the same
packages; docs/deploy.md tells hosts installed by hand to do the same. Run it after changing a
service's dependencies (tests/unit/test_packaging.py fails while a direct dependency has no pin or a
pin its range refuses) and commit the file. Needs `make dist` first: the services' wheels are what pip
resolves.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "deploy" / "packaging" / "constraints.txt"
SERVICES = ("replog-broker", "replog-controller", "replog-gateway")
HEADER = """\
# Exact versions of every third-party package the services install (replog-broker, replog-controller,
# replog-gateway and what they need). Written by `make constraints` (deploy/packaging/pin_constraints.py);
# the container image installs with it: pip install -c constraints.txt ...
"""


def resolve(dist_dir: Path) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--report", str(report), "--find-links", str(dist_dir), *SERVICES], check=True)
        installs = json.loads(report.read_text())["install"]
    return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installs
            if not item["metadata"]["name"].lower().startswith("replog-")}


def main() -> int:
    pins = resolve(REPO / "dist")
    CONSTRAINTS.write_text(HEADER + "".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
    print(f"wrote {len(pins)} pins to {CONSTRAINTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
