"""Where specs and generated output live, and loading a set of specs for rendering."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen import config
from kvgen.diagnostics import Diagnostic, has_errors
from kvgen.exits import UsageError
from kvgen.loader import load_path

if TYPE_CHECKING:  # render pulls in jinja2; lint must not
    from kvgen.render import SpecInput

# Built-in layout (a project's [tool.kvgen] overrides it; see kvgen.config).
SPEC_DIR = Path(config.SPEC_DIR)
OUT_DIR = Path(config.OUT_DIR)
SPEC_SUFFIXES = (".yaml", ".yml")


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; directories walked recursively to their ``*.yaml``/``*.yml`` files.

    The one path expander of ``kvgen lint`` and ``kvgen generate``. A path that does not exist
    is a usage error (exit 2), never a finding on a file that is not there.
    """
    paths = [Path(p) for p in paths]
    missing = [p.as_posix() for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(
                child
                for child in path.rglob("*")
                if child.suffix in SPEC_SUFFIXES and child.is_file()
            )
        else:
            files.append(path)
    return list(dict.fromkeys(files))


def spec_paths(paths: Iterable[str | Path] | None, default: Path = SPEC_DIR) -> list[Path]:
    """``expand_paths`` of the paths named, or of ``default`` (the spec directory)."""
    named = list(paths or [])
    if not named and not Path(default).exists():
        raise UsageError(
            f"no spec directory {Path(default).as_posix()} "
            "(run `kvgen init` to create one, or name spec files)"
        )
    return expand_paths(named or [default])


def load_specs(
    paths: list[Path], root: Path | None = None
) -> tuple[list[SpecInput], list[Diagnostic]]:
    """Load, validate and lint every spec; inputs are returned only for clean specs.

    ``root`` is the project root that headers show spec paths relative to (default: cwd).
    """
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
        inputs.append(SpecInput(spec_source(path, root), path.read_bytes(), loaded.family))
    return inputs, sorted(diagnostics)
