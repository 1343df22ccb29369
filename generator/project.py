"""Where specs and generated output live, and loading a set of specs for rendering."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen.diagnostics import Diagnostic, has_errors
from kvgen.loader import SPEC_SUFFIXES, expand_paths, load_path

if TYPE_CHECKING:  # render pulls in jinja2; lint must not
    from kvgen.render import SpecInput

SPEC_DIR = Path("schema/families")
OUT_DIR = Path("generated")
__all__ = ["OUT_DIR", "SPEC_DIR", "SPEC_SUFFIXES", "load_specs", "spec_paths"]


def spec_paths(paths: Iterable[str | Path] | None) -> list[Path]:
    """Files named, and ``*.yaml``/``*.yml`` under directories named (default: SPEC_DIR);
    a missing path is a ``UsageError`` (exit 2), as in ``kvgen lint``."""
    return expand_paths(paths or [SPEC_DIR])


def load_specs(paths: list[Path]) -> tuple[list[SpecInput], list[Diagnostic]]:
    """Load, validate and lint every spec; inputs are returned only for clean specs."""
    from kvgen.lint import duplicate_family, lint_loaded
    from kvgen.render import SpecInput, spec_source

    inputs: list[SpecInput] = []
    diagnostics: list[Diagnostic] = []
    seen: dict[str, str] = {}
    for path in paths:
        loaded = load_path(path)
        found = lint_loaded(loaded)
        diagnostics.extend(found)
        if loaded.family is None or has_errors(found):
            continue
        name = loaded.family.family
        if name in seen:
            at = loaded.source.value(("family",))
            diagnostics.append(duplicate_family(loaded.path, at, name, seen[name]))
            continue
        seen[name] = loaded.path
        inputs.append(SpecInput(spec_source(path), path.read_bytes(), loaded.family))
    return inputs, sorted(diagnostics)
