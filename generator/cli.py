"""The ``kvgen`` command line: a thin dispatcher over ``generator/commands/*``.

Each command module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> Exit``; a bad invocation raises ``UsageError``, printed here once.
Command modules keep heavy imports (jinja2, torch, matplotlib) inside ``run`` so that
``kvgen lint`` starts fast.

The project's ``[tool.kvgen]`` (or ``kvgen.toml``, see ``kvgen.config``) becomes the defaults of
the flags, so a flag given on the command line always wins; every command also receives it as
``args.project``. ``-q``/``-v`` are accepted before or after the command.

Exit codes: 0 clean, 1 findings or drift, 2 usage or internal error.
Findings go to stdout, logs and progress to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path

import kvgen.commands
from kvgen.config import Config, current
from kvgen.exits import Exit, UsageError
from kvgen.files import Refused

log = logging.getLogger("kvgen")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 as well; keep its text short
        self.print_usage(sys.stderr)
        print(f"kvgen: error: {message}", file=sys.stderr)
        raise SystemExit(Exit.USAGE)


def version() -> str:
    """The installed distribution's version (package metadata), or ``unknown`` in a bare tree."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("kvgen")
    except PackageNotFoundError:  # pragma: no cover - source tree without an install
        return "unknown"


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
    if command in ("plan", "diff"):
        defaults["generated"] = config.out_dir
        defaults.update(config.deployment)
        if command == "plan" and "max_batch_size" in defaults:
            defaults["max_batch_size"] = [defaults["max_batch_size"]]
    if command == "diff" and config.source is not None:
        defaults["paths"] = [config.spec_dir.as_posix()]
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


def build_parser(config: Config | None = None) -> argparse.ArgumentParser:
    """The ``kvgen`` parser; ``config`` (default: the one found from cwd) sets flag defaults."""
    config = config or current()
    parser = _Parser(prog="kvgen", description="Declarative KV-cache sizing.")
    parser.add_argument("--version", action="version", version=f"kvgen {version()}")
    _add_verbosity(parser, False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(kvgen.commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"kvgen.commands.{info.name}")
        module.register(subparsers)
    for name, subparser in subparsers.choices.items():
        _add_verbosity(subparser, argparse.SUPPRESS)
        _apply_project(name, subparser, config)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    config_error = None
    try:
        config = current()
    except UsageError as exc:  # a broken [tool.kvgen] / kvgen.toml: --version and -h still work
        config_error, config = exc, Config(root=Path.cwd())
    parser = build_parser(config)
    args = parser.parse_args(argv)
    if config_error is not None:
        print(f"kvgen: error: {config_error}", file=sys.stderr)
        return Exit.USAGE
    level = logging.ERROR if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="kvgen: %(message)s", stream=sys.stderr, force=True)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return Exit.USAGE
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"kvgen: error: {exc}", file=sys.stderr)
        return Exit.USAGE
    except Refused as exc:  # a file kvgen will not touch (kvgen.files): a finding, not a crash
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
        log.debug("internal error", exc_info=True)
        print(f"kvgen: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return Exit.USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
