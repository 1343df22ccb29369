"""Where specs and generated output live, and loading a set of specs for rendering."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen.diagnostics import Diagnostic, has_errors
from kvgen.loader import load_path

if TYPE_CHECKING:  # render pulls in jinja2; lint must not
    from kvgen.render import SpecInput

SPEC_DIR = Path("schema/families")
OUT_DIR = Path("generated")
SPEC_SUFFIXES = (".yaml", ".yml")


def spec_paths(paths: Iterable[str | Path] | None) -> list[Path]:
    """Files named, and ``*.yaml``/``*.yml`` inside directories named (default: SPEC_DIR)."""
    found: list[Path] = []
    for path in [Path(p) for p in paths or [SPEC_DIR]]:
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.suffix in SPEC_SUFFIXES))
        else:
            found.append(path)
    return found


def load_specs(paths: list[Path]) -> tuple[list[SpecInput], list[Diagnostic]]:
    """Load, validate and lint every spec; inputs are returned only for clean specs."""
    from kvgen.lint import lint_loaded
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
            line, col = loaded.source.value(("family",))
            diagnostics.append(
                Diagnostic(
                    loaded.path,
                    line,
                    col,
                    "KV010",
                    f"family '{name}' is also defined in {seen[name]}",
                    fix="give each spec file its own family name",
                )
            )
            continue
        seen[name] = loaded.path
        inputs.append(SpecInput(spec_source(path), path.read_bytes(), loaded.family))
    return inputs, sorted(diagnostics)
