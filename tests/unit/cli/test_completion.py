"""`replog completion bash|zsh` (replog.cli.completion): the script bash loads completes commands, verbs
and options from the parser itself, and needs no cluster."""

from __future__ import annotations

import subprocess

import pytest

from replog.cli.completion import script, words_by_path
from replog.cli.main import build_parser, main


def complete(words: list[str]) -> list[str]:
    """What bash offers for the last of `words` with the generated script loaded."""
    program = (f"{script(build_parser(), 'bash')}\nCOMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; "
               "_replog_complete; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.split()


def test_every_command_and_verb_has_its_words():
    words = words_by_path(build_parser())
    assert {"topics", "groups", "cluster", "produce", "consume", "completion"} <= set(words["replog"])
    assert "--execute" in words["replog groups reset-offsets"]
    assert "--bootstrap-server" in words["replog consume"] and "--key-format" in words["replog produce"]


@pytest.mark.parametrize("words, offered", [
    (["replog", "gr"], ["groups"]),
    (["replog", "groups", "res"], ["reset-offsets"]),
    (["replog", "groups", "reset-offsets", "--ex"], ["--execute"]),
    (["replog", "--gateway", "h:1", "cluster", "status", "--exit"], ["--exit-when-healthy"]),
    (["replog", "consume", "--topic", "t", "--bootstrap"], ["--bootstrap-server"]),
])
def test_bash_completes_through_global_options_and_values(words, offered):
    assert complete(words) == offered


def test_the_script_prints_without_a_cluster(capsys):
    assert main(["completion", "zsh"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# replog zsh completion\nautoload -U +X bashcompinit") and "complete -F" in out
