"""grpc_runtime.configure: replog's gRPC experiments for a process, unless the operator chose others."""

from __future__ import annotations

import os
import sys

from replog.common import grpc_runtime


def test_sets_replogs_experiments_when_the_environment_names_none(monkeypatch):
    monkeypatch.delenv(grpc_runtime.ENV, raising=False)
    monkeypatch.delitem(sys.modules, "grpc", raising=False)

    assert grpc_runtime.configure() is True
    assert grpc_runtime.VALUE == "-event_engine_client,-event_engine_listener"
    assert os.environ[grpc_runtime.ENV] == grpc_runtime.VALUE


def test_keeps_an_operators_own_setting(monkeypatch):
    monkeypatch.setenv(grpc_runtime.ENV, "-event_engine_client")
    monkeypatch.delitem(sys.modules, "grpc", raising=False)

    assert grpc_runtime.configure() is False
    assert os.environ[grpc_runtime.ENV] == "-event_engine_client"


def test_says_so_when_grpc_is_already_loaded(monkeypatch, caplog):
    monkeypatch.delenv(grpc_runtime.ENV, raising=False)
    monkeypatch.setitem(sys.modules, "grpc", object())

    assert grpc_runtime.configure() is False
    assert "apply to the processes this one starts" in caplog.text


def test_a_value_inherited_from_a_configured_parent_counts_as_applied(monkeypatch, caplog):
    monkeypatch.setenv(grpc_runtime.ENV, grpc_runtime.VALUE)
    monkeypatch.setitem(sys.modules, "grpc", object())  # loaded since, with the value already in place

    assert grpc_runtime.configure() is True
    assert caplog.text == ""
