"""`replog completion bash|zsh`: a shell completion script, drawn from the command line's own parser.

The script holds, for every command path (`topics`, `topics create`, ...), the words that may come
next: its subcommands and its options. It completes them without calling replog again (and so
without a cluster). Load it with `source <(replog completion bash)` in ~/.bashrc; zsh runs the same
function through bashcompinit (`source <(replog completion zsh)` in ~/.zshrc).
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh")

_FUNCTION = r'''
_replog_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" path="replog" word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    if [[ -n "${_replog_words["$path $word"]+set}" ]]; then
      path="$path $word"
    fi
  done
  COMPREPLY=($(compgen -W "${_replog_words["$path"]}" -- "$cur"))
}
complete -F _replog_complete replog
'''


def add_parser(sub, root: argparse.ArgumentParser) -> None:
    completion = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(run=run, offline=True, root=root)


def words_by_path(parser: argparse.ArgumentParser, path: str = "replog") -> dict[str, list[str]]:
    """Command path -> the subcommands and options that may follow it, for `parser` and every subparser."""
    found: dict[str, list[str]] = {}
    words: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                words.append(name)
                found.update(words_by_path(child, f"{path} {name}"))
        else:
            words.extend(s for s in action.option_strings if s.startswith("--"))
    found[path] = sorted(dict.fromkeys(words))
    return found


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    entries = "\n".join(f'  ["{path}"]="{" ".join(words)}"' for path, words in sorted(words_by_path(parser).items()))
    prelude = "autoload -U +X bashcompinit && bashcompinit\n" if shell == "zsh" else ""
    return f"# replog {shell} completion\n{prelude}declare -A _replog_words=(\n{entries}\n)\n{_FUNCTION.lstrip()}"


def run(args) -> int:
    print(script(args.root, args.shell), end="")
    return 0
