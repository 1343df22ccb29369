"""``kvgen explain CODE``: print the documentation of a diagnostic code (or rule name).

Exit codes: 0 found, 2 unknown code.
"""

from __future__ import annotations

import argparse
import sys

from kvgen.exits import Exit, UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain", help="explain a diagnostic code", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("code", metavar="CODE", help="a code such as KV205, or a rule name")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Exit:
    from kvgen.rules import find_rule

    rule = find_rule(args.code)
    if rule is None:
        raise UsageError(f"unknown code {args.code!r}; see 'kvgen lint --list-rules'")
    sys.stdout.write(f"{rule.code} ({rule.name}) [{rule.severity}]\n\n{rule.doc}\n")
    return Exit.OK
