"""Loading both sides of a review: the specs, and the sizing module that answers for each."""

from __future__ import annotations

import hashlib
import logging
import types
from dataclasses import dataclass
from pathlib import Path

from kvgen.diagnostics import has_errors
from kvgen.lint import duplicate_family
from kvgen.loader import load_bytes
from kvgen.project import SPEC_DIR, SPEC_SUFFIXES
from kvgen.review._git import GitTree
from kvgen.review._types import Review, ReviewError
from kvgen.spec import Family

__all__ = [
    "Side",
    "by_family",
    "candidate_paths",
    "committed_module",
    "load_side",
    "render_module",
]

log = logging.getLogger("kvgen")


@dataclass
class Side:
    """One family on one side: its spec and the sizing module that answers for it."""

    path: str
    raw: bytes
    family: Family
    module: types.ModuleType | None = None
    module_text: str = ""
    origin: str = ""


def candidate_paths(tree: GitTree, args: list[str]) -> list[Path]:
    found: dict[Path, None] = {}
    for arg in [Path(a) for a in args or [SPEC_DIR]]:
        if arg.is_dir() or tree.kind(arg) == "tree":
            now = (
                [p for p in sorted(arg.iterdir()) if p.suffix in SPEC_SUFFIXES]
                if arg.is_dir()
                else []
            )
            found.update(dict.fromkeys([*now, *tree.specs_in(arg)]))
        elif arg.is_file() or tree.kind(arg) == "blob":
            found[arg] = None
        else:
            raise ReviewError(
                f"{arg.as_posix()}: no such spec in the working tree or at {tree.ref}"
            )
    return sorted(found)


def load_side(label: str, display: str, raw: bytes, review: Review) -> Side | None:
    from kvgen.lint import lint_loaded

    loaded = load_bytes(label, raw)
    diagnostics = lint_loaded(loaded)
    if loaded.family is None or has_errors(diagnostics):
        review.diagnostics += diagnostics
        return None
    return Side(display, raw, loaded.family)


def by_family(sides: list[Side], review: Review, label: str) -> dict[str, Side]:
    out: dict[str, Side] = {}
    for side in sides:
        name = side.family.family
        if name in out:
            review.diagnostics.append(
                duplicate_family(f"{label}{side.path}", (1, 1), name, out[name].path)
            )
            continue
        out[name] = side
    return out


def _exec_module(text: str, name: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(text, filename, "exec"), module.__dict__)  # our own generated code, stdlib only
    return module


def render_module(side: Side, tag: str) -> None:
    from kvgen.render import SpecInput, render

    name = side.family.family
    text = render([SpecInput(side.path, side.raw, side.family)])[f"{name}/sizing.py"]
    side.module = _exec_module(text, f"kvgen_review_{tag}_{name}", f"<{tag}:{name}/sizing.py>")
    side.module_text = text


def committed_module(side: Side, tree: GitTree, out_dir: Path) -> None:
    """Use ``generated/<family>/sizing.py`` at the ref when it was generated from this spec."""
    name = side.family.family
    path = out_dir / name / "sizing.py"
    raw = tree.read(path)
    if raw is not None:
        label = f"{tree.ref}:{path.as_posix()}"
        try:
            module = _exec_module(raw.decode(), f"kvgen_review_old_{name}", label)
        except Exception as exc:  # an old module that no longer runs is rendered instead
            log.warning("%s does not load (%s); rendering the spec instead", label, exc)
        else:
            if getattr(module, "SPEC_SHA256", None) == hashlib.sha256(side.raw).hexdigest():
                side.module, side.module_text, side.origin = module, raw.decode(), label
                return
            log.warning("%s was generated from another spec; rendering the spec instead", label)
    render_module(side, "old")
    side.origin = f"{tree.ref}:{side.path} rendered by the current generator"
