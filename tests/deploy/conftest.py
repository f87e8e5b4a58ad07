"""`make test-deploy`: the compose cluster and the Kubernetes manifests under podman (long: not part of
the default suite). Each test prints what it measured at the end of the run."""

from __future__ import annotations

import json

import pytest

from tests.deploy.harness import ClientVenv, require_images

RESULTS: list[tuple[str, dict]] = []


@pytest.fixture(scope="session")
def client_venv():
    require_images()
    venv = ClientVenv()
    try:
        yield venv
    finally:
        venv.remove()


@pytest.fixture
def report(request):
    """Record what a test measured, printed in the run's summary."""
    def add(values: dict) -> None:
        RESULTS.append((request.node.name, values))
    return add


def pytest_terminal_summary(terminalreporter):
    if RESULTS:
        terminalreporter.section("deployment results")
        for name, values in RESULTS:
            terminalreporter.write_line(f"{name}: {json.dumps(values)}")
