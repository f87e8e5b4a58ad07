"""deploy/prometheus/ as Prometheus' own tool judges it: the rule files pass `promtool check rules`,
their unit tests (`*test*.yml`, run from that folder as the names promise) pass `promtool test
rules`, the scrape configurations pass `promtool check config`; every alert fires in some test
case and has a row in docs/operations.md."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "deploy" / "prometheus"


def rule_files() -> list[Path]:
    return sorted({*FOLDER.glob("*rules*.yml"), *FOLDER.glob("*alerts*.yml")} - set(rule_test_files()))


def rule_test_files() -> list[Path]:
    return sorted(FOLDER.glob("*test*.yml"))


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], cwd=FOLDER, capture_output=True, text=True, timeout=120)


def alerts() -> set[str]:
    return {rule["alert"] for path in rule_files() for group in yaml.safe_load(path.read_text())["groups"]
            for rule in group["rules"] if "alert" in rule}


def test_promtool_checks_the_rules():
    assert rule_files()
    result = promtool("check", "rules", *(p.name for p in rule_files()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_runs_the_rule_tests_from_the_folder():
    assert rule_test_files()
    result = promtool("test", "rules", *(p.name for p in rule_test_files()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_checks_the_scrape_configurations():
    configs = sorted(FOLDER.glob("prometheus*.yml"))
    assert configs
    for config in configs:
        result = promtool("check", "config", config.name)
        assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_fires_in_a_test_case():
    fired = {case["alertname"] for path in rule_test_files() for test in yaml.safe_load(path.read_text())["tests"]
             for case in test.get("alert_rule_test", ()) if case.get("exp_alerts")}
    assert alerts() - fired == set()


def test_every_alert_is_explained_in_operations_md():
    operations = (REPO / "docs" / "operations.md").read_text()
    assert [name for name in sorted(alerts()) if f"`{name}`" not in operations] == []
