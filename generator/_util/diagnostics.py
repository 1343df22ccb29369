"""Diagnostics: one finding anchored at file:line:col, with a stable rule code.

Codes are stable forever; a retired code is never reused. Each is declared once in the
registry ``kvgen._util.codes`` (``docs/codes.md`` is generated from it):
- ``KV0xx`` reading the file (encoding, YAML syntax, duplicate keys, aliases, tags)
- ``KV1xx`` the schema (types, ranges, unknown and missing keys)
- ``KV2xx`` semantic lint rules (``kvgen._lint.rules``)
- ``KV3xx`` ``kvgen import-hf`` (``kvgen._importhf``)
- ``KV4xx`` ``kvgen diff`` (``kvgen._review``)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kvgen._util.escaping import text as shown

Severity = Literal["error", "warning"]

# A path into a spec's data: ("models", 0, "layer_kinds", "local", "window").
Loc = tuple[str | int, ...]


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding. ``line`` and ``col`` are 1-based, as editors and CI annotations expect."""

    path: str
    line: int
    col: int
    code: str
    message: str
    severity: Severity = "error"
    fix: str = field(default="", compare=False)

    def render(self) -> str:
        """``path:line:col: CODE message`` (plus how to fix it), as one printable line: the
        path, message and fix may quote a spec and go through ``kvgen._util.escaping.text``."""
        where = f"{shown(self.path)}:{self.line}:{self.col}: {self.code}"
        level = " [warning]" if self.severity == "warning" else ""
        text = f"{where}{level} {shown(self.message)}"
        if self.fix:
            text += f" (fix: {shown(self.fix)})"
        return text


class SpecError(Exception):
    """Raised when a spec cannot be used; carries every diagnostic found."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics)
        super().__init__("\n".join(d.render() for d in self.diagnostics))


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)
