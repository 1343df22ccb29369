"""The ``kvgen`` command line: a thin dispatcher over ``generator/_cli/commands/*``.

Each command module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> Exit``; a bad invocation raises ``UsageError``, printed here once.
Command modules keep heavy imports (jinja2, torch, matplotlib) inside ``run`` so that
``kvgen lint`` starts fast.

The project's ``[tool.kvgen]`` (or ``kvgen.toml``, see ``kvgen._generate.config``) becomes the
defaults of the flags, so a flag given on the command line always wins; every command also receives
it as ``args.project``. ``-q``/``-v`` are accepted before or after the command.

Exit codes: 0 clean, 1 findings or drift, 2 usage or internal error.
Findings go to stdout, logs and progress to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from kvgen._util.exits import Exit, UsageError
from kvgen._util.files import Refused
from kvgen._util.meta import version
from kvgen._util.suggest import did_you_mean

if TYPE_CHECKING:
    from kvgen._generate.config import Config

__all__ = ["build_parser", "main", "version"]

# Every command (module kvgen._cli.commands.<name with _>) and its one-line help, so that `kvgen`,
# `kvgen --help` and `kvgen --version` import no command module and each command imports only
# its own. Each module's register() gives the same help (tests/cli/test_startup.py).
COMMANDS: dict[str, str] = {
    "compare": "compare the KV-cache capacity each engine gives one model",
    "completion": "print a shell completion script (bash, zsh, fish)",
    "diff": "report capacity and API changes against a git ref",
    "engines": "list the engine releases kvgen models and how each differs",
    "explain": "explain a diagnostic code",
    "generate": "generate sizing modules and allocator shims",
    "import-hf": "write a family spec from a Hugging Face config.json",
    "init": "set up kvgen in this repository",
    "lint": "validate specs and run the lint rules",
    "models": "list the families and models kvgen can plan here",
    "plan": "plan KV-cache capacity for one model and GPU budget",
    "schema": "export the JSON Schema of the spec format",
}

# Commands that never read the project's configuration: they start without parsing it (and
# without the dataclasses/tomllib it takes), as `kvgen --version` and `kvgen --help` do.
WITHOUT_PROJECT = frozenset({"completion", "engines", "explain"})


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 as well; keep its text short
        self.print_usage(sys.stderr)
        _error(f"kvgen: error: {message}")
        raise SystemExit(Exit.USAGE)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # A misspelt command or choice (`kvgen plna`, `--format jsno`) names the one meant.
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(choice) for choice in choices]
        hint = did_you_mean(str(value), names) or f" (choose from {', '.join(names)})"
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint}")

    # One signature for typeshed's three overloads (kvgen never passes a namespace of its own
    # class): mypy sees it as incompatible with the overloads that return one.
    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            _unrecognized(self, parsed, extras)
        return parsed


def _unrecognized(parser: argparse.ArgumentParser, namespace: object, extras: list[str]) -> None:
    """``unrecognized arguments``, with the flag meant when one of them is a misspelt flag."""
    command = _subcommands(parser).get(getattr(namespace, "command", None) or "")
    target = command or parser
    flags = [flag for action in target._actions for flag in action.option_strings]
    hint = ""
    for extra in extras:
        if extra.startswith("-"):
            hint = did_you_mean(extra.split("=", 1)[0], flags)
            if hint:
                break
    target.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command_word(argv: Sequence[str]) -> str | None:
    """The command in ``argv``: the first word that is not an option (global options take no
    value), or None for ``kvgen``, ``kvgen --version`` and ``kvgen --help``."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def _add_verbosity(parser: argparse.ArgumentParser, default: object) -> None:
    # After the command the flags default to SUPPRESS, so they never undo one given before it.
    group = parser.add_argument_group("global options")
    group.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="no progress or logs"
    )
    group.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="debug logs on stderr"
    )


def _project_defaults(command: str, config: Config) -> dict[str, object]:
    """Flag defaults that the project's config sets for ``command`` (by argparse dest)."""
    defaults: dict[str, object] = {}
    if command == "generate":
        defaults["out"] = config.out_dir
    if command == "plan":
        defaults["generated"] = config.out_dir
        # The engine is resolved by the command, which says where it came from (flag,
        # config, default): never a flag default.
        defaults.update({k: v for k, v in config.deployment.items() if k != "engine"})
        if "max_batch_size" in defaults:
            defaults["max_batch_size"] = [defaults["max_batch_size"]]
    # `kvgen diff` takes no default from the working tree's configuration: a pull request owns
    # it, so the review reads the locations and the reference deployment from the ref's
    # configuration as well (kvgen._review._layout); only flags override them.
    if command == "schema":
        defaults["output"] = config.schema_file.as_posix()
    return defaults


def _apply_project(name: str, parser: argparse.ArgumentParser, config: Config) -> None:
    defaults = _project_defaults(name, config)
    for action in parser._actions:
        if action.dest in defaults:
            action.default = defaults[action.dest]
            action.required = False  # e.g. plan --gpu-memory, once the config gives it
    parser.set_defaults(project=config)


def build_parser(config: Config | None = None, *, project: bool = True) -> argparse.ArgumentParser:
    """The full ``kvgen`` parser (every command registered); ``config`` (default: the one found
    from cwd) sets flag defaults, unless ``project`` is false (built-in defaults only)."""
    if config is None and project:
        from kvgen._generate.config import current

        config = current()
    return _build(config, COMMANDS)


def _build(config: Config | None, commands: Iterable[str]) -> argparse.ArgumentParser:
    """The parser with ``commands`` registered by their modules and the others as placeholders
    (a name and its help: enough for ``--help`` and "did you mean"); the project's defaults
    apply when ``config`` is given (see WITHOUT_PROJECT)."""
    parser = _Parser(prog="kvgen", description="Declarative KV-cache sizing.")
    parser.add_argument("-V", "--version", action="version", version=f"kvgen {version()}")
    _add_verbosity(parser, False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    registered = set(commands)
    for name, summary in COMMANDS.items():
        if name in registered:
            module = importlib.import_module(f"kvgen._cli.commands.{name.replace('-', '_')}")
            module.register(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
    for name, subparser in subparsers.choices.items():
        _add_verbosity(subparser, argparse.SUPPRESS)
        if config is not None:
            _apply_project(name, subparser, config)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_word(argv)
    config, config_error = None, None
    if command is not None and command not in WITHOUT_PROJECT:
        from kvgen._generate.config import Config, current

        try:
            config = current()
        except UsageError as exc:  # a broken [tool.kvgen] / kvgen.toml: -h still works
            config_error, config = exc, Config(root=Path.cwd())
    parser = _build(config, [command] if command in COMMANDS else [])
    args = parser.parse_args(argv)
    if config_error is not None:
        _error(f"kvgen: error: {config_error}")
        return Exit.USAGE
    import logging  # after parsing: --version and --help never need it

    level = logging.ERROR if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    _install_log_format(level)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return Exit.USAGE
    try:
        return int(args.func(args))
    except UsageError as exc:
        _error(f"kvgen: error: {exc}")
        return Exit.USAGE
    except (
        Refused
    ) as exc:  # a file kvgen will not touch (kvgen._util.files): a finding, not a crash
        print(exc.diagnostic.render())
        return exc.exit
    except KeyboardInterrupt:  # pragma: no cover - interactive
        return Exit.USAGE
    except BrokenPipeError:  # `kvgen ... | head`: output was cut, so the result is not success
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail
        return Exit.FINDINGS
    except Exception as exc:  # an internal error is still a diagnostic, not a traceback
        logging.getLogger("kvgen").debug("internal error", exc_info=True)
        _error(f"kvgen: internal error: {type(exc).__name__}: {exc}")
        return Exit.USAGE


def _error(message: str) -> None:
    """A message on stderr: it may quote a file, a ref or a generated module (untrusted), so
    no control character and no workflow command gets through (``_escaping.text_lines``)."""
    from kvgen._util.escaping import text_lines

    print(text_lines(message), file=sys.stderr)


def _install_log_format(level: int) -> None:
    """``kvgen: <message>`` on stderr, each message escaped as ``_error`` escapes its own."""
    import logging

    from kvgen._util.escaping import text_lines

    class Escaped(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return text_lines(super().format(record))

    logging.basicConfig(level=level, format="kvgen: %(message)s", stream=sys.stderr, force=True)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(Escaped("kvgen: %(message)s"))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
