"""``kvgen generate``: render every spec into generated/, or check that it is up to date."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kvgen._config import OUT_DIR
from kvgen._exits import Exit, UsageError

log = logging.getLogger("kvgen")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="generate sizing modules and allocator shims",
        description="Render generated/<family>/{sizing,allocator}.py from specs. With no "
        "SPEC, every spec under schema/families is rendered and orphaned generated files "
        "are removed (or reported with --check).",
    )
    parser.add_argument("specs", nargs="*", metavar="SPEC", help="spec files or directories")
    parser.add_argument("--out", type=Path, default=Path(OUT_DIR), help="output directory")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 and print a diff on drift"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Exit:
    from kvgen._diagnostics import has_errors
    from kvgen._project import load_specs, spec_paths
    from kvgen._render import RenderError, render
    from kvgen._writer import LockHeld, apply, plan

    paths = spec_paths(args.specs, default=args.project.spec_dir)
    if not paths:
        where = ", ".join(map(str, args.specs)) or args.project.spec_dir.as_posix()
        if args.specs:
            raise UsageError(f"no spec files (*.yaml, *.yml) in {where}")
        log.warning("no spec files (*.yaml, *.yml) in %s: nothing to generate", where)
        return Exit.OK
    inputs, diagnostics = load_specs(paths, root=args.project.root)
    for diagnostic in diagnostics:
        print(diagnostic.render())
    if has_errors(diagnostics):
        log.error("not generating: fix the errors above; nothing was written to %s", args.out)
        return Exit.FINDINGS
    log.info("rendering %d famil%s", len(inputs), "y" if len(inputs) == 1 else "ies")
    from kvgen._progress import Progress

    try:
        with Progress("rendering", len(inputs)) as progress:
            rendered = render(inputs, progress.advance)  # all compiled before anything is written
    except RenderError as exc:
        log.error("internal error, nothing was written to %s: %s", args.out, exc)
        return Exit.USAGE
    result = plan(rendered, args.out, prune=not args.specs, root=args.project.root)
    if result.refused:  # a link, FIFO or oversized file in the tree: read and write nothing
        for diagnostic in result.refused:
            print(diagnostic.render())
        log.error("not generating: fix the errors above; nothing was written to %s", args.out)
        return Exit.FINDINGS
    if args.check:
        if not result.drift:
            log.info("%s is up to date (%d files)", args.out, len(result.unchanged))
            return Exit.OK
        try:
            _report_drift(result, args.out)
        except BrokenPipeError:  # `kvgen generate --check | head`: drift is still drift
            _silence_stdout()
        return Exit.FINDINGS
    try:
        touched = apply(result)
    except LockHeld as exc:
        log.error("%s", exc)
        return Exit.USAGE
    for rel in touched:
        log.info("wrote %s", (args.out / rel).as_posix())
    log.info("%d written, %d unchanged", len(touched), len(result.unchanged))
    return Exit.OK


def _report_drift(result, out: Path) -> None:
    sys.stdout.write(result.diff())
    for rel in result.missing:
        print(f"missing: {(out / rel).as_posix()}")
    for rel in result.changed:
        print(f"out of date: {(out / rel).as_posix()}")
    for rel in result.orphaned:
        print(f"orphaned: {(out / rel).as_posix()} (no spec produces it)")
    sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    print("run `kvgen generate` to update", file=sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
