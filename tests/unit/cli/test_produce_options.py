"""`replog produce`'s options as the parser reads them (replog.cli.data), no cluster needed."""

from __future__ import annotations

import pytest

from replog.cli.main import build_parser


@pytest.mark.parametrize("flag", ["--compression-type", "--compression"])
def test_compression_has_two_spellings_of_one_flag(flag):
    args = build_parser().parse_args(["produce", "--topic", "t", flag, "zstd"])
    assert args.compression_type == "zstd"


def test_compression_defaults_to_none_and_refuses_an_unknown_codec(capsys):
    assert build_parser().parse_args(["produce", "--topic", "t"]).compression_type == "none"
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["produce", "--topic", "t", "--compression", "brotli"])
    assert exited.value.code == 2
    assert "invalid choice: 'brotli'" in capsys.readouterr().err


def test_the_help_names_both_spellings(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["produce", "--help"])
    choices = "{gzip,lz4,none,snappy,zstd}"
    assert f"--compression-type {choices}, --compression {choices}" in " ".join(capsys.readouterr().out.split())
