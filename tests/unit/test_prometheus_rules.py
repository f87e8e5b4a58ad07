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


def scrape_jobs() -> list[dict]:
    return [job for config in sorted(FOLDER.glob("prometheus*.yml"))
            for job in yaml.safe_load(config.read_text())["scrape_configs"]]


def job_role(job: dict) -> str | None:
    """The `role` label a job's relabelling sets on every target it finds."""
    for rule in job.get("relabel_configs", ()):
        if rule.get("target_label") == "role":
            return rule["replacement"]
    return None


def kubernetes_service_names() -> set[str]:
    return {document["metadata"]["name"] for manifest in sorted((REPO / "deploy" / "kubernetes").glob("*.yaml"))
            for document in yaml.safe_load_all(manifest.read_text())
            if document and document.get("kind") == "Service"}


def test_every_scraped_port_is_its_roles_metrics_port():
    """A target on another port (the gRPC port, or a made-up one) is scraped in vain: ReplogProcessDown
    fires for a healthy process. The ports are ports.py's, which every process listens on by default."""
    from replog.common import ports

    scraped = []
    for job in scrape_jobs():
        for group in job.get("static_configs", ()):
            role = group.get("labels", {}).get("role")
            scraped += [(job["job_name"], role, int(target.rsplit(":", 1)[1])) for target in group["targets"]]
        for dns in job.get("dns_sd_configs", ()):
            scraped.append((job["job_name"], job_role(job), dns["port"]))
    assert scraped
    assert [(job, role, port) for job, role, port in scraped
            if role not in ports.BY_ROLE or port != ports.BY_ROLE[role].metrics] == []


def test_every_dns_name_scraped_is_a_kubernetes_service():
    """Prometheus finds nothing under a name the manifests do not define: every job would be empty and
    no alert could fire."""
    names = [name for job in scrape_jobs() for dns in job.get("dns_sd_configs", ()) for name in dns["names"]]
    assert names
    assert [name for name in names if name.split(".")[0] not in kubernetes_service_names()] == []
