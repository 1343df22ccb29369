"""``review_specs``: load both sides, evaluate them and classify every change."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from kvgen._generate.project import OUT_DIR, SPEC_DIR
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
    ReferenceDeployment,
    Review,
    ReviewError,
)
from kvgen._util.diagnostics import has_errors
from kvgen._util.progress import Progress

__all__ = ["review_shipped", "review_specs"]

log = logging.getLogger("kvgen")


def review_specs(
    ref: str,
    paths: list[str],
    deployment: ReferenceDeployment,
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


def review_shipped(
    paths: list[str], deployment: ReferenceDeployment, *, spec_dir: Path = SPEC_DIR
) -> Review:
    """``review_specs`` with the families kvgen ships as the old side, matched by family name,
    instead of a git ref: what a project's copy of a shipped family changes (``kvgen diff
    --shipped``). No git repository is needed; only families kvgen ships are compared."""
    from kvgen._generate.shipped import shipped_families, shipped_specs
    from kvgen._spec.loader import MAX_BYTES, expand_paths
    from kvgen._util.files import Refused, read_bytes
    from kvgen._util.meta import version

    review = Review(f"kvgen {version()} (shipped)", deployment)
    named: list[str | Path] = [*paths] if paths else [spec_dir]
    if not paths and not spec_dir.is_dir():
        raise ReviewError(f"no spec directory {spec_dir.as_posix()}: name spec files")
    files = expand_paths(named)
    new_sides = []
    for path in files:
        display = path.as_posix()
        try:  # kvgen._util.files: no link followed, regular files only, bounded
            raw = read_bytes(path, limit=MAX_BYTES)
        except Refused as exc:
            review.diagnostics.append(exc.diagnostic)
            continue
        if side := load_side(display, display, raw, review):
            new_sides.append(side)
    new = by_family(new_sides, review, "")
    specs = shipped_specs()
    shipped = [name for name in sorted(new) if name in shipped_families()]
    if not has_errors(review.diagnostics) and not shipped:
        names = ", ".join(sorted(new)) or "none"
        raise ReviewError(
            f"no spec under {', '.join(map(str, named))} names a family kvgen ships "
            f"(families found: {names}; `kvgen models` lists the shipped ones)"
        )
    old_sides = []
    for name in shipped:
        assert specs is not None
        spec = specs / f"{name}.yaml"
        label = f"{review.ref}:{name}.yaml"  # shown as the project's path, as at a git ref
        if side := load_side(label, new[name].path, spec.read_bytes(), review):
            old_sides.append(side)
    old = by_family(old_sides, review, "")
    if has_errors(review.diagnostics):
        review.diagnostics.sort()
        return review
    new = {name: new[name] for name in shipped}
    with Progress("evaluating families", len(shipped)) as progress:
        for name in shipped:
            progress.advance(name)
            _review_family(name, old, new, {}, None, OUT_DIR, review)
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
        review.engine_changes += engine_changes(name, before, after, deployment.kv_cache_dtype)
        review.families[name] = family_status(changes, before, after)
    acks = after.family.acknowledge
    review.changes += [
        replace(c, acknowledged=acknowledgement_reason(acks, c)) if c.kind in BLOCKING else c
        for c in changes
    ]
