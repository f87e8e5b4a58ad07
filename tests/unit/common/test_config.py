"""Typed configuration: precedence, conversion and one-line errors."""

from __future__ import annotations

import dataclasses

import pytest

from replog.common.config import ConfigError, load_config, one_of, setting, tcp_port, zookeeper_connect


@dataclasses.dataclass(frozen=True)
class Sample:
    port: int = setting(9000, "port", tcp_port)
    zookeeper: str = setting("127.0.0.1:2181", "zk", zookeeper_connect)
    verbose: bool = setting(False, "verbose")
    mode: str = setting("fast", "mode", one_of("fast", "safe"))


def load(argv, env=None):
    return load_config(Sample, argv, env or {}, prog="sample")


def test_defaults_are_laptop_friendly():
    assert load([]) == Sample(9000, "127.0.0.1:2181", False, "fast")


def test_flag_beats_environment_beats_file_beats_default(tmp_path):
    config_file = tmp_path / "c.toml"
    config_file.write_text('port = 7000\nmode = "safe"\nverbose = true\n')
    from_file = load(["--config", str(config_file)])
    assert (from_file.port, from_file.mode, from_file.verbose) == (7000, "safe", True)
    from_env = load(["--config", str(config_file)], {"REPLOG_PORT": "7100"})
    assert from_env.port == 7100
    from_flag = load(["--config", str(config_file), "--port", "7200"], {"REPLOG_PORT": "7100"})
    assert from_flag.port == 7200


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--port", "70000"], "flag --port=70000 must be a TCP port"),
        (["--port", "abc"], "flag port='abc' is not a valid int"),
        (["--zookeeper", "localhost"], "bad host:port 'localhost'"),
        (["--mode", "reckless"], "must be one of fast, safe"),
        (["--verbose", "maybe"], "not a valid bool"),
        (["--nonsense", "1"], "unrecognized arguments: --nonsense"),
    ],
)
def test_bad_values_name_the_key_and_the_rule(argv, message):
    with pytest.raises(ConfigError) as caught:
        load(argv)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_config_file_problems_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load(["--config", str(tmp_path / "missing.toml")])
    bad = tmp_path / "bad.toml"
    bad.write_text("port = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(["--config", str(bad)])
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("colour = 'blue'\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load(["--config", str(unknown)])


@pytest.mark.parametrize("value", ["zk1:2181", "zk1:2181,zk2:2182/replog", "127.0.0.1:2181/a/b"])
def test_zookeeper_connect_accepts_ensembles_and_chroots(value):
    assert load(["--zookeeper", value]).zookeeper == value
