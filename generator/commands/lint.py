"""``kvgen lint [PATH ...]``: validate specs and run the semantic rules.

Exit codes: 0 no errors (warnings alone pass unless ``--strict``), 1 findings, 2 usage or
internal error (including a PATH that does not exist). Findings go to stdout in the chosen
format; the summary goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys

from kvgen.console import colour_findings, use_colour
from kvgen.exits import Exit
from kvgen.project import expand_paths
from kvgen.reporters import REPORTERS

log = logging.getLogger("kvgen")

FORMATS = tuple(REPORTERS)  # the reporter registry is the one list of formats


def register(subparsers: argparse._SubParsersAction) -> None:
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
    parser.set_defaults(func=run)


def list_rules() -> str:
    from kvgen.rules import all_codes

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
    paths = args.paths or [args.project.spec_dir]
    files = expand_paths(paths)  # a missing path is a UsageError: exit 2

    from kvgen.lint import lint_paths
    from kvgen.reporters import render

    if not files:
        log.warning("no spec files (*.yaml, *.yml) under %s", ", ".join(map(str, paths)))
    diagnostics = lint_paths(files)
    report = render(args.format, diagnostics)
    if args.format == "text" and use_colour(sys.stdout):
        report = colour_findings(report)
    sys.stdout.write(report)
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    log.info(
        "%d error%s, %d warning%s in %d file%s",
        errors,
        "" if errors == 1 else "s",
        warnings,
        "" if warnings == 1 else "s",
        len(files),
        "" if len(files) == 1 else "s",
    )
    return Exit.FINDINGS if errors or (warnings and args.strict) else Exit.OK
