"""Nesting depth of untrusted JSON and TOML text, measured before any parser recurses.

``json.loads`` (its C scanner) and ``tomllib`` recurse once per nested array or table, so a
file of a few thousand brackets ends in ``RecursionError``. Each reader checks the depth first
with the scanner here and refuses a file that nests deeper than ``MAX_DEPTH`` at the bracket
that crosses it. The scans are linear: strings and comments are skipped whole by patterns whose
every alternative matches once it starts and where no character can be matched two ways (so
nothing backtracks), and brackets are counted.

A scanner must agree with its parser on every text the parser accepts up to the bracket; where
the text is invalid (an unterminated string, say), the parser stops there with its own error,
before any bracket the scanner might have skipped.
"""

from __future__ import annotations

import bisect
import itertools
import re

__all__ = ["MAX_DEPTH", "json_too_deep", "position", "toml_too_deep"]

#: arrays and objects (tables) inside one another; a Hugging Face config nests 3 or 4 levels
#: (``text_config``, ``rope_scaling``), a deployment or project TOML file 2, a safetensors header
#: 2 (a tensor's ``shape`` inside its entry), an index file 2.
MAX_DEPTH = 32

# A JSON string is an unrolled loop with an optional closing quote: it matches once it starts, so
# an unterminated string runs to the end in one pass (a pattern that needed the closing quote
# retried at every later quote: quadratic in `"` + `\"` x N).
_JSON_SKIP = r'"[^"\\]*(?:\\.[^"\\]*)*"?'

# TOML: multi-line strings first (up to two quotes inside, a closing run of 3 to 5 quotes ends
# them, as the TOML spec allows), then one-line strings (which end at a line break), comments.
# Table headers (``[a]``, ``[[a]]``) open and close on their line, so they count as brackets.
_TOML_SKIP = (
    r'"""(?:[^"\\]|\\[\s\S]?|"{1,2}(?!"))*(?:"{3,5}|\Z)'
    r"|'''(?:[^']|'{1,2}(?!'))*(?:'{3,5}|\Z)"
    r'|"(?:[^"\\\n]|\\[^\n]?)*"?'
    r"|'[^'\n]*'?"
    r"|#[^\n]*"
)

_OTHER = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class _Scanner:
    """Depth of the brackets outside what ``skip`` matches (strings, comments).

    The common case runs in C: ``re.sub`` drops what is skipped, then every character but the
    brackets, and ``itertools.accumulate`` gives the running depth. Only a text found too deep
    is scanned again token by token, for the offset of the bracket that crosses the bound (the
    two scans find the same strings: a bracket is one character and never holds a quote)."""

    def __init__(self, skip: str):
        self.skip = re.compile(skip, re.DOTALL)
        self.tokens = re.compile(skip + r"|[\[\]{}]", re.DOTALL)

    def too_deep(self, text: str, limit: int) -> int | None:
        brackets = _OTHER.sub("", self.skip.sub("", text))
        if max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0) <= limit:
            return None
        depth = 0
        for match in self.tokens.finditer(text):
            token = match.group()
            if token in "[{":
                depth += 1
                if depth > limit:
                    return match.start()
            elif token in "]}":
                depth -= 1
        raise AssertionError("the two scans of one text disagree")  # pragma: no cover


_JSON = _Scanner(_JSON_SKIP)
_TOML = _Scanner(_TOML_SKIP)


def json_too_deep(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The offset of the first bracket of ``text`` (JSON) nested deeper than ``limit``."""
    return _JSON.too_deep(text, limit)


def toml_too_deep(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The offset of the first array or inline table of ``text`` (TOML) deeper than ``limit``."""
    return _TOML.too_deep(text, limit)


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` (lines end at ``\\n``, as git counts them)."""
    starts = [0] + [m.end() for m in re.finditer("\n", text[:offset])]
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1] + 1
