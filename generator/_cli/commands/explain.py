"""``kvgen explain CODE``: print the documentation of a diagnostic code (or rule name).

``--write-docs`` writes ``docs/codes.md`` from the same registry; ``--check-docs`` writes
nothing and exits 1 with a diff when the file is stale. Exit codes: 0 found (or up to
date), 1 stale docs, 2 unknown code or usage error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kvgen._util.exits import Exit, UsageError
from kvgen._util.meta import CODES_DOC

log = logging.getLogger("kvgen")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="explain a diagnostic code",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "code", nargs="?", metavar="CODE", help="a code such as KV205, or a rule name"
    )
    docs = parser.add_mutually_exclusive_group()
    docs.add_argument(
        "--write-docs",
        nargs="?",
        const=CODES_DOC,
        metavar="PATH",
        help=f"write the codes reference (default: {CODES_DOC})",
    )
    docs.add_argument(
        "--check-docs",
        nargs="?",
        const=CODES_DOC,
        metavar="PATH",
        help=f"exit 1 if the codes reference is stale (default: {CODES_DOC})",
    )
    parser.set_defaults(func=run)


def _docs(args: argparse.Namespace) -> Exit:
    from kvgen._generate.writer import write_atomic
    from kvgen._lint.codes_doc import render_codes_page
    from kvgen._lint.rules import all_codes
    from kvgen._spec.schema_export import schema_diff

    path = Path(args.write_docs or args.check_docs)
    fresh = render_codes_page(all_codes())
    diff = schema_diff(path, fresh)
    if args.check_docs:
        sys.stdout.write(diff)
        if diff:
            log.error("%s is out of date; run 'kvgen explain --write-docs'", path.as_posix())
        return Exit.FINDINGS if diff else Exit.OK
    if diff:
        write_atomic(path, fresh)
        log.info("wrote %s", path.as_posix())
    return Exit.OK


def run(args: argparse.Namespace) -> Exit:
    if args.write_docs or args.check_docs:
        if args.code:
            raise UsageError("give a CODE or --write-docs/--check-docs, not both")
        return _docs(args)
    if not args.code:
        raise UsageError("give a CODE to explain (see 'kvgen lint --list-rules')")
    from kvgen._cli.catalogue import CODES  # a literal table: no rule (nor pydantic) imported

    wanted = args.code.strip()
    code = wanted.upper()
    if code not in CODES:
        code = next((c for c, entry in CODES.items() if entry[0] == wanted.lower()), "")
    if not code:
        from kvgen._lint.rules import unknown_code  # the registry, for the "did you mean"

        raise UsageError(unknown_code(args.code))
    name, severity, _fix, doc = CODES[code]
    sys.stdout.write(f"{code} ({name}) [{severity}]\n\n{doc}\n")
    return Exit.OK
