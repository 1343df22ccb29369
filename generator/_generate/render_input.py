"""What rendering takes in, below both ``render`` and the template context builders.

``render`` imports the context builders (``sizing_context``, ``allocator_context``); they import
only this module, so the dependency runs one way. Nothing here imports jinja2.

- ``SpecInput``: one validated spec, its exact bytes and the path its header names;
- ``pyrepr``: the one filter through which every literal reaches generated code;
- ``artifact``: the registry of per-family files and the builder of each one's context;
- ``unsafe_path``: why a path cannot be named in generated code (control characters).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvgen._spec.models import Family

__all__ = [
    "ARTIFACTS",
    "ContextBuilder",
    "SpecInput",
    "artifact",
    "project_root",
    "pyrepr",
    "scalar_literal",
    "spec_source",
    "unsafe_path",
]

# A directory holding one of these is a project root: headers name specs relative to it.
ROOT_MARKERS = ("pyproject.toml", "kvgen.toml", ".git")


@dataclass(frozen=True)
class SpecInput:
    """One spec as render sees it: where it came from, its exact bytes, and the model."""

    source: str  # named in the header (through ``pyrepr``), e.g. "schema/families/gemma3.yaml"
    raw: bytes
    family: Family

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()


def pyrepr(value: Any) -> str:
    """The one filter through which every literal reaches generated code.

    ``repr`` escapes every character that could end a comment, a string or a line
    (newlines, quotes, backslashes, U+2028, other non-printables), so its output is one
    token of Python whatever the value holds.
    """
    if isinstance(value, bool | int | str | float) or value is None:
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(pyrepr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(pyrepr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{pyrepr(k)}: {pyrepr(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no literal form for {type(value).__name__}")


# An artifact: file name inside generated/<family>/, its template, and its context builder.
ContextBuilder = Callable[[SpecInput], dict[str, Any]]
ARTIFACTS: dict[str, tuple[str, ContextBuilder]] = {}


def scalar_literal(value: Any) -> str:
    """``pyrepr`` of a scalar with the quotes ``ruff format`` prefers: a string goes in double
    quotes unless it holds one (repr already picked double quotes then). Both table builders
    write scalars through this, so generated tables are canonical without a formatter."""
    text = pyrepr(value)
    if isinstance(value, str) and text.startswith("'") and '"' not in value:
        return f'"{text[1:-1]}"'
    return text


def artifact(name: str, template: str) -> Callable[[ContextBuilder], ContextBuilder]:
    """Register ``builder`` as the context of ``generated/<family>/<name>``."""

    def register(builder: ContextBuilder) -> ContextBuilder:
        ARTIFACTS[name] = (template, builder)
        return builder

    return register


def unsafe_path(path: str) -> str | None:
    """Why ``path`` may not be named in generated code or diagnostics, ``None`` if it may (the
    loader's KV011 check: a control or separator character could end the header comment)."""
    from kvgen._spec.loader import path_problem

    return path_problem(path)


def project_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding pyproject.toml, kvgen.toml or .git."""
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in ROOT_MARKERS):
            return directory
    return None


def spec_source(path: Path, root: Path | None = None) -> str:
    """How a spec's path appears in headers: relative to the project root, POSIX style.

    The root is ``root`` when given, else the spec's project root (see ``project_root``), else
    the working directory; so ``cd schema && kvgen generate families/x.yaml`` names the spec
    as a run from the root does. A spec outside the root is named by its file name.
    """
    resolved = path.resolve()
    base = (root or project_root(resolved.parent) or Path.cwd()).resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return path.name
