"""``kvgen completion SHELL``: print a completion script for bash, zsh or fish.

    bash:  eval "$(kvgen completion bash)"     (in ~/.bashrc)
    zsh:   eval "$(kvgen completion zsh)"      (in ~/.zshrc, after compinit)
    fish:  kvgen completion fish > ~/.config/fish/completions/kvgen.fish

The script completes commands, their flags and the values of flags with choices, and file
names elsewhere; it is static (TAB never starts kvgen), so print it again after upgrading
kvgen. Exit codes: 0 printed, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys

from kvgen._cli.completion import SHELLS, script
from kvgen._util.exits import Exit


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=tuple(SHELLS), metavar="SHELL", help="bash, zsh or fish")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Exit:
    from kvgen._cli.main import build_parser  # every command's parser: built only to print it

    sys.stdout.write(script(args.shell, build_parser(project=False)))
    return Exit.OK
