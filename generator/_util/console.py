"""Colour for text findings: only on a terminal, and never when ``NO_COLOR`` is set.

https://no-color.org: any non-empty ``NO_COLOR`` disables colour. Pipes, files and CI logs
never receive escape codes, so machine-read output (``--format json|github|sarif``, redirected
text) stays byte-identical.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

__all__ = ["colour_findings", "use_colour"]

RESET = "\033[0m"
STYLES = {"position": "\033[1m", "error": "\033[31;1m", "warning": "\033[33;1m"}
# `path:line:col: CODE [warning] message` as Diagnostic.render writes it.
_FINDING = re.compile(r"^(?P<pos>.*?:\d+:\d+:) (?P<code>KV\d{3})(?P<warn> \[warning\])?", re.M)


def use_colour(stream: TextIO) -> bool:
    """Whether to colour what goes to ``stream``."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def colour_findings(text: str) -> str:
    """The position in bold, the code red for an error or yellow for a warning."""

    def paint(match: re.Match[str]) -> str:
        severity = "warning" if match.group("warn") else "error"
        return (
            f"{STYLES['position']}{match.group('pos')}{RESET} "
            f"{STYLES[severity]}{match.group('code')}{match.group('warn') or ''}{RESET}"
        )

    return _FINDING.sub(paint, text)
