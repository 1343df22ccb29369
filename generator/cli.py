"""The ``kvgen`` command line: a thin dispatcher over ``generator/commands/*``.

Each command module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> int``. Command modules keep heavy imports (jinja2, torch,
matplotlib) inside ``run`` so that ``kvgen lint`` starts fast.

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

import kvgen.commands
from kvgen.exits import Exit, UsageError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = Exit.OK, Exit.FINDINGS, Exit.USAGE

log = logging.getLogger("kvgen")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 as well; keep its text short
        self.print_usage(sys.stderr)
        print(f"kvgen: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kvgen", description="Declarative KV-cache sizing.")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or logs on stderr")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs on stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(kvgen.commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"kvgen.commands.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.ERROR if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="kvgen: %(message)s", stream=sys.stderr, force=True)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"kvgen: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # pragma: no cover - interactive
        return EXIT_USAGE
    except BrokenPipeError:  # `kvgen ... | head`: output was cut, so the result is not success
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail
        return EXIT_FINDINGS
    except Exception as exc:  # an internal error is still a diagnostic, not a traceback
        log.debug("internal error", exc_info=True)
        print(f"kvgen: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
