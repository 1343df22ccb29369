"""``kvgen generate``: render every spec into generated/, or check that it is up to date."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen._generate.config import OUT_DIR
from kvgen._util.exits import Exit, UsageError

if TYPE_CHECKING:
    from kvgen._generate.writer import WritePlan

log = logging.getLogger("kvgen")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    from kvgen._generate.project import load_specs, spec_paths
    from kvgen._generate.render import RenderError, render
    from kvgen._generate.writer import LockHeld, apply, plan
    from kvgen._util.diagnostics import has_errors

    paths = spec_paths(args.specs, default=args.project.spec_dir)
    if not paths:
        where = ", ".join(map(str, args.specs)) or args.project.spec_dir.as_posix()
        if args.specs:
            raise UsageError(f"no spec files (*.yaml, *.yml) in {where}")
        log.warning("no spec files (*.yaml, *.yml) in %s: nothing to generate", where)
        if not args.check:
            return Exit.OK
    inputs, diagnostics = load_specs(paths, root=args.project.root)
    for diagnostic in diagnostics:
        print(diagnostic.render())
    if has_errors(diagnostics):
        log.error("not generating: fix the errors above; nothing was written to %s", args.out)
        return Exit.FINDINGS
    log.info("rendering %d famil%s", len(inputs), "y" if len(inputs) == 1 else "ies")
    from kvgen._util.progress import Progress

    try:
        with Progress("rendering", len(inputs)) as progress:
            # All compiled before anything is written; no spec: nothing to render.
            rendered = render(inputs, progress.advance) if inputs else {}
    except RenderError as exc:
        log.error("internal error, nothing was written to %s: %s", args.out, exc)
        return Exit.USAGE
    if args.check:
        outputs = _checked_outputs(args)
        return _check(rendered, outputs, prune=not args.specs, root=args.project.root)
    result = plan(rendered, args.out, prune=not args.specs, root=args.project.root)
    if result.refused:  # a link, FIFO or oversized file in the tree: read and write nothing
        for diagnostic in result.refused:
            print(diagnostic.render())
        log.error("not generating: fix the errors above; nothing was written to %s", args.out)
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


def _checked_outputs(args: argparse.Namespace) -> list[Path]:
    """``--out`` (or the configured ``out``), and the built-in output folder ``generated/`` of
    the project when it exists and is another folder: in pull-request CI the configuration is
    pull-request content, and re-pointing ``out`` at a fresh folder must not leave a
    hand-edited module unchecked where consumers import it (issue 29, G2)."""
    from kvgen._util.files import exists

    default = args.project.path(Path(OUT_DIR))
    same = os.path.abspath(default) == os.path.abspath(args.out)  # a link is not its target
    return [args.out] if same or not exists(default) else [args.out, default]


def _check(rendered: dict[str, str], outputs: list[Path], *, prune: bool, root: Path) -> Exit:
    """``--check``: each output folder against ``rendered``; exit 1 on any drift."""
    from kvgen._generate.writer import plan
    from kvgen._util.files import exists

    drift = False
    for out in outputs:
        if not rendered and not exists(out):
            continue  # no specs and no output: nothing is out of date
        result = plan(rendered, out, prune=prune, root=root)
        if result.refused:  # a link, FIFO or oversized file in the tree: read nothing more
            for diagnostic in result.refused:
                print(diagnostic.render())
            log.error("not checking %s: fix the errors above", out)
            drift = True
        elif result.drift:
            try:
                _report_drift(result, out)
            except BrokenPipeError:  # `kvgen generate --check | head`: drift is still drift
                _silence_stdout()
                return Exit.FINDINGS
            drift = True
        else:
            log.info("%s is up to date (%d files)", out, len(result.unchanged))
    return Exit.FINDINGS if drift else Exit.OK


def _report_drift(result: WritePlan, out: Path) -> None:
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
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
