"""What a line is: only a line feed (or CR LF) ends one, as for git, diff views and ``wc -l``.

YAML readers also end a line at U+2028, U+2029, U+0085 and a lone CR, so text that looks like
one comment line to a reviewer can hold keys for kvgen (issue 18). Every file kvgen reads as
text (specs, its configuration, Hugging Face configs) is checked here first, before any parser
sees it, and refused with KV015 at the character's real position: line counted by ``\\n``
only, column in characters (as the YAML positions are).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kvgen._util.codes.lines import FOREIGN_LINE_BREAK
from kvgen._util.diagnostics import Diagnostic

__all__ = ["MAX_REPORTED", "foreign_line_breaks", "line_break_diagnostics"]

# The characters YAML 1.2 (and PyYAML) treat as line breaks that git does not.
_FOREIGN = re.compile("[\x85\u2028\u2029]|\r(?!\n)")
MAX_REPORTED = 20  # diagnostics per file: a file full of them needs one fix, not a million lines


def foreign_line_breaks(text: str) -> Iterator[tuple[int, int, str]]:
    """``(line, col, char)`` of every foreign line break, 1-based, lines counted by ``\\n``."""
    line, line_start, counted = 1, 0, 0
    for match in _FOREIGN.finditer(text):
        at = match.start()
        line += text.count("\n", counted, at)
        newline = text.rfind("\n", 0, at)
        line_start, counted = (newline + 1 if newline >= 0 else 0), at
        yield line, at - line_start + 1, match.group()


_NAMES = {
    "\x85": "NEXT LINE",  # a C1 control: unicodedata has no name for it
    "\u2028": "LINE SEPARATOR",
    "\u2029": "PARAGRAPH SEPARATOR",
    "\r": "CARRIAGE RETURN without a line feed",
}


def line_break_diagnostics(path: str, text: str) -> list[Diagnostic]:
    """KV015 for the first ``MAX_REPORTED`` foreign line breaks of ``text`` (``[]``: none)."""
    if _FOREIGN.search(text) is None:  # the fast path: one scan of a clean file
        return []
    found: list[Diagnostic] = []
    for line, col, char in foreign_line_breaks(text):
        if len(found) == MAX_REPORTED:
            break
        message = (
            f"U+{ord(char):04X} {_NAMES[char]} ends a line for YAML but not for git, diff views "
            "or editors; lines end only at \\n"
        )
        found.append(FOREIGN_LINE_BREAK.at(path, (line, col), message))
    return found
