"""The reference pages that describe generated facts (API, configuration, metrics, ZooKeeper layout)
and the Grafana dashboard match the code."""

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
    from replog.common.metrics import table

    for metric in table.TABLE:
        assert f"`{metric.name}`" in metrics, metric.name


def test_every_znode_path_the_schema_names_is_in_the_layout():
    from replog.common.zk import schema

    laid_out = {znode.path for znode in schema.LAYOUT}
    parents = set(schema.PERSISTENT_PATHS) | {schema.ADMIN, schema.CONFIG}
    named = {value for name, value in vars(schema).items()
             if name.isupper() and isinstance(value, str) and value.startswith("/")}
    missing = sorted(path for path in named - parents if path not in laid_out)
    assert not missing, f"paths with no row in schema.LAYOUT: {missing}"
