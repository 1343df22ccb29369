"""The one table of diagnostic codes: each code is declared exactly once, with ``declare``.

A code never changes meaning and a retired code is never reused. KV0xx/KV1xx are declared in
``kvgen._util.codes.reader`` (KV015 in ``kvgen._util.codes.lines``), KV3xx in
``kvgen._util.codes.hf``, KV4xx in ``kvgen._util.codes.review``; each KV2xx lint rule is declared by
its own module under ``kvgen._lint.rules`` (``CODE``, ``NAME``, ``SEVERITY``, docstring, ``check``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kvgen._util.diagnostics import Diagnostic, Severity

__all__ = ["Code", "declare", "declared"]

_ORIGINS = {"KV0": "reader", "KV1": "schema", "KV2": "lint", "KV3": "import-hf", "KV4": "diff"}


@dataclass(frozen=True)
class Code:
    """One code: kebab name, default severity, documentation (summary line first), default fix.

    ``check`` is the lint rule's function for KV2xx codes, ``None`` for codes the loader or
    the importer emit.
    """

    code: str
    name: str
    severity: Severity
    doc: str
    fix: str = ""
    check: Callable[[Any], Iterable[Any]] | None = None

    @property
    def summary(self) -> str:
        return self.doc.split("\n", 1)[0].strip()

    @property
    def origin(self) -> str:
        return _ORIGINS.get(self.code[:3], "lint")

    def at(
        self, path: str, at: tuple[int, int], message: str, fix: str | None = None
    ) -> Diagnostic:
        """A diagnostic of this code at ``at`` (1-based line, col); ``fix`` defaults to ours."""
        return Diagnostic(
            path, at[0], at[1], self.code, message, self.severity, self.fix if fix is None else fix
        )


_DECLARED: dict[str, Code] = {}


def declare(code: str, name: str, *, fix: str, doc: str, severity: Severity = "error") -> Code:
    """Register ``code``; declaring the same code (or name) twice is a programming error."""
    if code in _DECLARED or any(entry.name == name for entry in _DECLARED.values()):
        raise ValueError(f"{code} ({name}) is declared twice")
    entry = Code(code, name, severity, inspect.cleandoc(doc), fix)
    _DECLARED[code] = entry
    return entry


def declared() -> tuple[Code, ...]:
    """Every code declared with ``declare`` so far, sorted by code."""
    return tuple(sorted(_DECLARED.values(), key=lambda entry: entry.code))
