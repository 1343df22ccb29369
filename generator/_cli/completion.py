"""Shell completion scripts for bash, zsh and fish, generated from the ``kvgen`` parser.

The script is written from the argparse tree at run time, so it lists exactly the commands,
flags and choices of the kvgen that printed it, and needs no dependency (shtab covers bash and
zsh but not fish; argcomplete would start kvgen on every TAB). Completion is static: commands,
each command's flags, the values of flags with choices, and file names everywhere else.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SHELLS", "script"]


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    options: tuple[Option, ...]
    values: tuple[str, ...]  # choices of its positional arguments (e.g. completion SHELL)


def _help(action: argparse.Action) -> str:
    text = "" if action.help in (None, argparse.SUPPRESS) else str(action.help)
    if "%" in text:  # argparse's own %(default)s expansion
        with contextlib.suppress(KeyError, TypeError, ValueError):
            text = text % {**vars(action), "prog": "kvgen"}
    return re.sub(r"\s+", " ", text).strip()


def _options(parser: argparse.ArgumentParser) -> tuple[Option, ...]:
    return tuple(
        Option(
            tuple(action.option_strings),
            _help(action),
            action.nargs != 0,
            tuple(map(str, action.choices or ())),
        )
        for action in parser._actions
        if action.option_strings and action.help != argparse.SUPPRESS
    )


def tree(parser: argparse.ArgumentParser) -> tuple[tuple[Option, ...], tuple[Command, ...]]:
    """The global options and every command of ``parser``."""
    commands = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                values = tuple(
                    str(choice)
                    for a in sub._actions
                    if not a.option_strings and a.choices
                    for choice in a.choices
                )
                commands.append(Command(name, helps.get(name, ""), _options(sub), values))
    return _options(parser), tuple(commands)


def _words(items: tuple[str, ...]) -> str:
    return " ".join(items)


def bash(options: tuple[Option, ...], commands: tuple[Command, ...]) -> str:
    def flags(opts: tuple[Option, ...]) -> str:
        return _words(tuple(flag for option in opts for flag in option.flags))

    cases = []
    for command in commands:
        values = [
            f"                {'|'.join(o.flags)}) COMPREPLY=($(compgen -W '{_words(o.choices)}' "
            '-- "$cur")); return ;;'
            for o in command.options
            if o.choices
        ]
        takes = [
            flag for o in command.options if o.takes_value and not o.choices for flag in o.flags
        ]
        if takes:
            values.append(f"                {'|'.join(takes)}) return ;;  # a value: files")
        prev = (
            '            case "$prev" in\n' + "\n".join(values) + "\n            esac\n"
            if values
            else ""
        )
        positional = (
            f"\n            COMPREPLY=($(compgen -W '{_words(command.values)}' -- \"$cur\"))"
            if command.values
            else ""
        )
        cases.append(
            f"        {command.name})\n{prev}"
            f"            opts='{flags(command.options)}'{positional}\n"
            "            ;;"
        )
    return (
        '# bash completion for kvgen: eval "$(kvgen completion bash)" in ~/.bashrc\n'
        "_kvgen() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"\n'
        '    local command="" opts="" i\n'
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        '        if [[ ${COMP_WORDS[i]} != -* ]]; then command="${COMP_WORDS[i]}"; break; fi\n'
        "    done\n"
        "    if [[ -z $command ]]; then\n"
        f"        COMPREPLY=($(compgen -W '{_words(tuple(c.name for c in commands))} "
        f'{flags(options)}\' -- "$cur"))\n'
        "        return\n"
        "    fi\n"
        '    case "$command" in\n' + "\n".join(cases) + "\n    esac\n"
        "    if [[ $cur == -* ]]; then\n"
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))\n'
        "    fi\n"
        "}\n"
        "complete -o default -F _kvgen kvgen\n"
    )


def _zsh_text(text: str) -> str:
    """Help text inside a single-quoted zsh ``_arguments`` spec: no quote, bracket or colon."""
    return text.replace("'", "").replace("[", "(").replace("]", ")").replace(":", " -")


def _zsh_specs(opts: tuple[Option, ...]) -> list[str]:
    specs = []
    for o in opts:
        value = f":{o.flags[-1].lstrip('-').upper()}:" if o.takes_value else ""
        if value:
            value += f"({_words(o.choices)})" if o.choices else "_files"
        names = o.flags[0] if len(o.flags) == 1 else "{" + ",".join(o.flags) + "}"
        exclusive = f"'({' '.join(o.flags)})'" if len(o.flags) > 1 else ""
        specs.append(f"{exclusive}{names}'[{_zsh_text(o.help)}]{value}'")
    return specs


def zsh(options: tuple[Option, ...], commands: tuple[Command, ...]) -> str:
    described = "\n".join(f"        '{c.name}:{_zsh_text(c.help)}'" for c in commands)
    cases = []
    for command in commands:
        rest = f"'*:VALUE:({_words(command.values)})'" if command.values else "'*:file:_files'"
        specs = " \\\n                ".join([*_zsh_specs(command.options), rest])
        cases.append(f"            {command.name})\n                _arguments {specs} ;;")
    globals_ = " \\\n        ".join(_zsh_specs(options))
    return (
        "#compdef kvgen\n"
        "# zsh completion for kvgen: kvgen completion zsh > ~/.zfunc/_kvgen (a directory on\n"
        '# $fpath, before compinit), or eval "$(kvgen completion zsh)" after compinit\n'
        "_kvgen() {\n"
        '    local curcontext="$curcontext" state line\n'
        "    local -a commands\n"
        f"    commands=(\n{described}\n    )\n"
        f"    _arguments -C \\\n        {globals_} \\\n"
        "        '1:command:->command' \\\n"
        "        '*::argument:->argument'\n"
        "    case $state in\n"
        "        command) _describe -t commands 'kvgen command' commands ;;\n"
        "        argument)\n"
        "            case $words[1] in\n" + "\n".join(cases) + "\n            esac ;;\n"
        "    esac\n"
        "}\n"
        'if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _kvgen "$@"; '
        "else compdef _kvgen kvgen; fi\n"
    )


def _fish_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(condition: str, o: Option) -> str:
    parts = [f"complete -c kvgen -n {condition}"]
    for flag in o.flags:
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    if o.choices:
        parts.append(f"-x -a {_fish_text(_words(o.choices))}")
    elif o.takes_value:
        parts.append("-r -F")
    if o.help:
        parts.append(f"-d {_fish_text(o.help)}")
    return " ".join(parts)


def fish(options: tuple[Option, ...], commands: tuple[Command, ...]) -> str:
    lines = [
        "# fish completion for kvgen:",
        "#   kvgen completion fish > ~/.config/fish/completions/kvgen.fish",
        "complete -c kvgen -f",
    ]
    lines += [_fish_option("__fish_use_subcommand", o) for o in options]
    for command in commands:
        lines.append(
            f"complete -c kvgen -n __fish_use_subcommand -a {command.name} "
            f"-d {_fish_text(command.help)}"
        )
        seen = f"'__fish_seen_subcommand_from {command.name}'"
        if command.values:
            lines.append(f"complete -c kvgen -n {seen} -x -a {_fish_text(_words(command.values))}")
        else:
            lines.append(f"complete -c kvgen -n {seen} -F")
        lines += [_fish_option(seen, o) for o in command.options]
    return "\n".join(lines) + "\n"


SHELLS: dict[str, Callable[[tuple[Option, ...], tuple[Command, ...]], str]] = {
    "bash": bash,
    "zsh": zsh,
    "fish": fish,
}


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script of ``shell`` for ``parser``."""
    return SHELLS[shell](*tree(parser))
