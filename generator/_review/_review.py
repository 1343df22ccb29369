"""``review_specs``: load both sides, evaluate them and classify every change."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from kvgen._diagnostics import has_errors
from kvgen._progress import Progress
from kvgen._project import OUT_DIR, SPEC_DIR
from kvgen._review._candidates import collect, new_bytes, old_bytes
from kvgen._review._compare import (
    acknowledgement_reason,
    compare_family,
    engine_changes,
    family_status,
    pair_renames,
)
from kvgen._review._git import GitTree
from kvgen._review._sides import (
    Side,
    by_family,
    committed_module,
    load_side,
    render_module,
)
from kvgen._review._types import (
    ADDED,
    ANY,
    API,
    BLOCKING,
    Change,
    Deployment,
    Review,
    ReviewError,
)

__all__ = ["review_specs"]

log = logging.getLogger("kvgen")


def review_specs(
    ref: str,
    paths: list[str],
    deployment: Deployment,
    *,
    cwd: Path | None = None,
    out_dir: Path = OUT_DIR,
    trust_committed_modules: bool = False,
    tree: GitTree | None = None,
) -> Review:
    """Load both sides, evaluate them and classify every change (see the package docstring).

    ``trust_committed_modules``: evaluate the old side through the sizing module committed at
    the ref (in a separate process); by default both sides are rendered by this kvgen.
    ``tree``: the ref's ``GitTree`` when the caller has read it already.
    """
    tree = tree or GitTree(ref, cwd or Path.cwd())
    review = Review(ref, deployment)
    candidates = collect(tree, paths)
    if not candidates:
        raise ReviewError(f"no spec files under {', '.join(paths or [str(SPEC_DIR)])}")
    old_sides, new_sides = [], []
    with Progress("reading specs", len(candidates)) as progress:
        for candidate in candidates:
            display = candidate.path.as_posix()
            progress.advance(display)
            log.debug("reading %s (at %s and in the working tree)", display, ref)
            raw = old_bytes(candidate, tree, review)
            if raw is not None and (side := load_side(f"{ref}:{display}", display, raw, review)):
                old_sides.append(side)
            raw = new_bytes(candidate, tree, review)
            if raw is not None and (side := load_side(display, display, raw, review)):
                new_sides.append(side)
    old = by_family(old_sides, review, f"{ref}:")
    new = by_family(new_sides, review, "")
    if has_errors(review.diagnostics):
        review.diagnostics.sort()
        return review
    renamed = pair_renames(old, new)
    names = [n for n in sorted(set(old) | set(new)) if n not in renamed.values()]
    with Progress("evaluating families", len(names)) as progress:
        for i, name in enumerate(names, 1):
            progress.advance(name)
            log.debug("[%d/%d] evaluating family %s", i, len(names), name)
            trusted = tree if trust_committed_modules else None
            _review_family(name, old, new, renamed, trusted, out_dir, review)
    return review


def _review_family(
    name: str,
    old: dict[str, Side],
    new: dict[str, Side],
    renamed: dict[str, str],
    tree: GitTree | None,
    out_dir: Path,
    review: Review,
) -> None:
    if name not in new:
        review.families[name] = "removed"
        review.changes.append(Change(name, ANY, ANY, ANY, API, "family removed"))
        return
    after = new[name]
    review.spec_paths[name] = after.path
    review.spec_lines[name] = after.lines
    changes: list[Change] = []
    before = old.get(renamed.get(name, name))
    if before is None:
        review.families[name] = "added"
        changes.append(Change(name, ANY, ANY, ANY, ADDED, "family added"))
    else:
        deployment = review.deployment
        if tree is None or not committed_module(before, tree, out_dir, deployment):
            render_module(before, "old", deployment)
            before.origin = f"{review.ref}:{before.path} rendered by this kvgen"
        render_module(after, "new", deployment)
        log.debug("%s: old side from %s", name, before.origin)
        if name in renamed:
            detail = f"family renamed from {renamed[name]}"
            changes.append(Change(name, ANY, ANY, ANY, API, detail))
        changes += compare_family(name, before, after, deployment=deployment)
        review.engine_changes += engine_changes(name, before, after)
        review.families[name] = family_status(changes, before, after)
    acks = after.family.acknowledge
    review.changes += [
        replace(c, acknowledged=acknowledgement_reason(acks, c)) if c.kind in BLOCKING else c
        for c in changes
    ]
