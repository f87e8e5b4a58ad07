"""The reference pages that describe generated facts (API, configuration, metrics) match the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

GENERATOR = Path(__file__).resolve().parents[2] / "docs" / "generate.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_page_is_up_to_date():
    stale = load_generator().stale_pages()
    assert not stale, f"stale pages in docs/: {', '.join(stale)}; run `make docs` and commit them"


def test_every_config_key_and_metric_is_on_its_page():
    generator = load_generator()
    configuration, metrics = generator.render_configuration(), generator.render_metrics()
    for program, config in generator._service_configs():
        for name in config.__dataclass_fields__:
            assert f"`{name}`" in configuration, (program, name)
    for name in ("replog_broker_leader_count", "replog_controller_active_controller_count"):
        assert f"`{name}`" in metrics
