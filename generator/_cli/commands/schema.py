"""``kvgen schema``: write ``schema/kvspec.schema.json`` exported from the spec models.

With ``--check``, write nothing: exit 1 and print a unified diff when the file differs from a
fresh export, and list the specs under the ``families/`` folder beside it that lack the
``# yaml-language-server: $schema=...`` modeline. Exit codes: 0 up to date, 1 drift, 2 error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from kvgen._generate.config import SCHEMA_FILE
from kvgen._generate.writer import write_atomic
from kvgen._util.exits import Exit

log = logging.getLogger("kvgen")

DEFAULT_OUTPUT = SCHEMA_FILE  # the project config's `schema` replaces it (kvgen._generate.config)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="export the JSON Schema of the spec format",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-o", "--output", default=DEFAULT_OUTPUT, help=f"schema file (default: {DEFAULT_OUTPUT})"
    )
    parser.add_argument("--check", action="store_true", help="report drift, write nothing")
    parser.set_defaults(func=run)


def expected_modeline(spec: Path, schema: Path) -> str:
    from kvgen._spec.schema_export import MODELINE_PREFIX

    relative = os.path.relpath(schema.resolve(), spec.resolve().parent)
    return MODELINE_PREFIX + Path(relative).as_posix()


def missing_modelines(schema: Path) -> list[str]:
    """``path:1:1: ...`` lines for specs under ``<schema dir>/families`` without the modeline."""
    from kvgen._spec.loader import MAX_BYTES
    from kvgen._util.files import Refused, read_bytes

    families = schema.parent / "families"
    problems = []
    for spec in sorted([*families.glob("*.yaml"), *families.glob("*.yml")]):
        modeline = expected_modeline(spec, schema)
        try:  # kvgen._util.files: no link followed, no FIFO or device read
            raw = read_bytes(spec, limit=MAX_BYTES)
            first = raw.decode("utf-8").split("\n", 1)[0].rstrip("\r")
        except Refused as exc:
            problems.append(exc.diagnostic.render())
            continue
        except UnicodeDecodeError:
            first = ""
        if first != modeline:
            problems.append(f"{spec.as_posix()}:1:1: first line must be '{modeline}'")
    return problems


def run(args: argparse.Namespace) -> Exit:
    from kvgen._spec.schema_export import export_schema, schema_diff

    output = Path(args.output)
    fresh = export_schema()
    diff = schema_diff(output, fresh)
    if args.check:
        problems = missing_modelines(output)
        sys.stdout.write(diff)
        sys.stdout.write("".join(f"{line}\n" for line in problems))
        if diff:
            log.error("%s is out of date; run 'kvgen schema'", output.as_posix())
        return Exit.FINDINGS if diff or problems else Exit.OK
    if not diff:
        log.info("%s is up to date", output.as_posix())
        return Exit.OK
    write_atomic(output, fresh)
    log.info("wrote %s", output.as_posix())
    return Exit.OK
