"""``kvgen lint [PATH ...]``: validate specs and run the semantic rules.

--select/--ignore/--extend-select take codes or code prefixes as ruff does (KV2: every lint
rule; KV21: KV210-KV219; KV216: one rule); ``# kvgen: noqa: KV216`` at the end of a line
suppresses that finding there (a bare ``# kvgen: noqa``: every lint finding on the line).
Findings of reading the file and of the schema (KV0xx, KV1xx) are always reported.

Exit codes: 0 no errors (warnings alone pass unless ``--strict``), 1 findings, 2 usage or
internal error (including a PATH that does not exist). Findings go to stdout in the chosen
format; the summary goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen._lint.reporters import REPORTERS
from kvgen._util.exits import Exit

if TYPE_CHECKING:
    from kvgen._generate.config import Config

log = logging.getLogger("kvgen")

FORMATS = tuple(REPORTERS)  # the reporter registry is the one list of formats


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="validate specs and run the lint rules",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="spec files or directories of *.yaml/*.yml (default: the spec directory)",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument(
        "--list-rules", action="store_true", help="list every diagnostic code and exit"
    )
    selection = parser.add_argument_group("rule selection (codes or prefixes, comma-separated)")
    selection.add_argument(
        "--select", action="append", metavar="CODES", help="only these (default: KV, every code)"
    )
    selection.add_argument(
        "--extend-select", action="append", default=[], metavar="CODES", help="these as well"
    )
    selection.add_argument(
        "--ignore", action="append", default=[], metavar="CODES", help="not these"
    )
    parser.set_defaults(func=run)


def list_rules() -> str:
    from kvgen._lint.rules import all_codes

    rules = all_codes()
    width = max(len(rule.name) for rule in rules)
    return "".join(
        f"{rule.code}  {rule.severity:<7}  {rule.origin:<6}  {rule.name:<{width}}  {rule.summary}\n"
        for rule in rules
    )


def run(args: argparse.Namespace) -> Exit:
    if args.list_rules:
        sys.stdout.write(list_rules())
        return Exit.OK
    from kvgen._cli.catalogue import CODES
    from kvgen._lint.noqa import Selection

    selected = Selection(args.select, args.ignore, args.extend_select, known=CODES)
    paths = args.paths or _spec_dirs(args.project)
    from kvgen._generate.project import expand_paths  # the loader: pydantic and yaml

    files = expand_paths(paths)  # a missing path is a UsageError: exit 2

    from kvgen._lint.linter import lint_report
    from kvgen._lint.reporters import render
    from kvgen._util.console import colour_findings, use_colour

    if not files:
        log.warning("no spec files (*.yaml, *.yml) under %s", ", ".join(map(str, paths)))
    report = lint_report(files, root=args.project.root)
    diagnostics = [d for d in report.diagnostics if selected(d.code)]
    suppressed = [d for d in report.suppressed if selected(d.code)]
    output = render(args.format, diagnostics, suppressed=suppressed)
    if args.format == "text" and use_colour(sys.stdout):
        output = colour_findings(output)
    sys.stdout.write(output)
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    log.info(
        "%s, %s%s in %s",
        _count(errors, "error"),
        _count(warnings, "warning"),
        f", {len(suppressed)} suppressed" if suppressed else "",
        _count(len(files), "file"),
    )
    return Exit.FINDINGS if errors or (warnings and args.strict) else Exit.OK


def _spec_dirs(project: Config) -> list[Path]:
    """The configured spec directory, and the built-in ``schema/families`` of the project when
    it exists and is another folder: in pull-request CI the configuration is pull-request
    content, and re-pointing ``specs`` must not take specs out of the lint (issue 29)."""
    from kvgen._generate.config import SPEC_DIR
    from kvgen._util.files import exists

    configured, default = project.spec_dir, project.path(Path(SPEC_DIR))
    same = os.path.abspath(default) == os.path.abspath(configured)  # a link is not its target
    return [configured] if same or not exists(default) else [configured, default]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
