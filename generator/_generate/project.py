"""Where specs and generated output live, and loading a set of specs for rendering."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen._generate import config
from kvgen._spec.loader import SPEC_SUFFIXES, expand_paths
from kvgen._util.diagnostics import Diagnostic
from kvgen._util.exits import UsageError

if TYPE_CHECKING:  # render pulls in jinja2; lint must not
    from kvgen._generate.render import SpecInput

# Built-in layout (a project's [tool.kvgen] overrides it; see kvgen._generate.config).
SPEC_DIR = Path(config.SPEC_DIR)
OUT_DIR = Path(config.OUT_DIR)
__all__ = ["OUT_DIR", "SPEC_DIR", "SPEC_SUFFIXES", "expand_paths", "load_specs", "spec_paths"]


def spec_paths(paths: Iterable[str | Path] | None, default: Path = SPEC_DIR) -> list[Path]:
    """``expand_paths`` of the paths named, or of ``default`` (the spec directory)."""
    named = list(paths or [])
    if not named and not Path(default).exists():
        raise UsageError(
            f"no spec directory {Path(default).as_posix()} "
            "(run `kvgen init` to create one, or name spec files; the families kvgen ships "
            "need no generating: `kvgen models` lists them)"
        )
    return expand_paths(named or [default])


def load_specs(
    paths: list[Path], root: Path | None = None
) -> tuple[list[SpecInput], list[Diagnostic]]:
    """Load, validate and lint every spec; inputs are returned only for clean specs.

    ``root`` is the project root that headers show spec paths relative to (default: cwd).
    """
    from kvgen._generate.render import SpecInput, spec_source
    from kvgen._lint.linter import check_paths

    clean, report = check_paths(paths, root)  # every check lint runs, KV010 included
    inputs = [  # a clean spec has its family
        SpecInput(spec_source(path, root), s.raw, s.family)
        for path, s in clean
        if s.family is not None
    ]
    return inputs, report.diagnostics
