"""The hand-written docs point at files that exist, and the README's diagram is the architecture's."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
TOP = ("services/", "libs/", "spark/", "deploy/", "tests/", "bench/", "docs/", "protos/")


def test_every_repository_path_a_page_names_exists():
    missing = []
    for page in PAGES:
        for token in re.findall(r"`([^`\s]+)`", page.read_text()):
            path = token.split("::")[0].rstrip("/.,:")
            if path.startswith(TOP) and not any(c in path for c in "<>*{}"):
                if not (REPO / path).exists():
                    missing.append(f"{page.relative_to(REPO)}: {token}")
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def diagram(page: Path) -> str:
    text = page.read_text()
    start = text.index("```mermaid\nflowchart LR\n")
    return text[start:text.index("```", start + 3)]


def test_the_readme_shows_the_architecture_diagram():
    assert diagram(REPO / "README.md") == diagram(REPO / "docs" / "architecture.md")


def test_every_performance_note_is_in_the_index_and_every_link_in_code_names_a_note():
    notes = {p.name for p in (REPO / "docs" / "perf").glob("*.md")} - {"README.md"}
    index = (REPO / "docs" / "perf" / "README.md").read_text()
    assert not [n for n in sorted(notes) if f"]({n})" not in index], "notes missing from docs/perf/README.md"
    cited = set()
    for root in ("services", "libs", "spark", "deploy", "bench", "tests"):
        for path in (REPO / root).rglob("*.py"):
            cited.update(re.findall(r"docs/perf/([\w.-]+\.md)", path.read_text()))
    unknown = sorted(cited - notes - {"README.md"})
    assert cited and not unknown, f"code cites notes that do not exist: {unknown}"
