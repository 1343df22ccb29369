"""A JSON reader that records where each key and value starts (line:col), for diagnostics.

Configs are untrusted: nesting is bounded before any parser recurses (``nesting_too_deep``),
and numbers no config field can hold (NaN, infinities, integers of more than
``MAX_INT_DIGITS`` digits) are read as ``Unrepresentable`` markers, so that the field checks
report them at their key instead of Python raising ``ValueError`` or building a huge value.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from typing import Any

from kvgen._util.nesting import MAX_DEPTH, json_too_deep

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "JsonReader",
    "Path_",
    "Unrepresentable",
    "loads",
    "nesting_too_deep",
]

Path_ = tuple[str | int, ...]

MAX_JSON_DEPTH = MAX_DEPTH
MAX_INT_DIGITS = 20  # int64 has 19; Python refuses int() of more than 4300 digits


class Unrepresentable:
    """A number no config field can hold; shown as written (shortened)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        if len(self.text) <= 24:
            return self.text
        return f"{self.text[:12]}...({len(self.text)} characters)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unrepresentable) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _int(text: str) -> int | Unrepresentable:
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else Unrepresentable(text)


def _float(text: str) -> float | Unrepresentable:
    value = float(text)
    return value if math.isfinite(value) else Unrepresentable(text)


_HOOKS: dict[str, Any] = {
    "parse_int": _int,
    "parse_float": _float,
    "parse_constant": Unrepresentable,
}


def loads(text: str) -> Any:
    """``json.loads`` with bounded numbers (call ``nesting_too_deep`` first)."""
    return json.loads(text, **_HOOKS)


def nesting_too_deep(text: str) -> int | None:
    """The offset of the first bracket nested deeper than ``MAX_JSON_DEPTH``, else None.

    Linear on any input (``kvgen._util.nesting``); run it before ``loads`` (whose C scanner and our
    reader recurse once per level)."""
    return json_too_deep(text, MAX_JSON_DEPTH)


class JsonReader:
    """Parse JSON already known to be valid, recording each key's and value's line:col."""

    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.keys: dict[Path_, tuple[int, int]] = {}
        self.values: dict[Path_, tuple[int, int]] = {}
        self.duplicates: list[tuple[Path_, tuple[int, int]]] = []
        self._decoder = json.JSONDecoder(**_HOOKS)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in " \t\r\n":
            i += 1
        return i

    def read(self, i: int, path: Path_) -> tuple[Any, int]:
        i = self._skip(i)
        self.values[path] = self.position(i)
        char = self.text[i]
        if char == "{":
            out: dict[str, Any] = {}
            i = self._skip(i + 1)
            while self.text[i] != "}":
                # CPython's string scanner (json.decoder's), which typeshed does not declare
                key, end = json.decoder.scanstring(self.text, i + 1)  # type: ignore[attr-defined]
                if key in out:
                    self.duplicates.append(((*path, key), self.position(i)))
                else:
                    self.keys[(*path, key)] = self.position(i)
                i = self._skip(end)  # at ':'
                out[key], i = self.read(i + 1, (*path, key))
                i = self._skip(i)
                if self.text[i] == ",":
                    i = self._skip(i + 1)
            return out, i + 1
        if char == "[":
            items: list[Any] = []
            i = self._skip(i + 1)
            while self.text[i] != "]":
                item, i = self.read(i, (*path, len(items)))
                items.append(item)
                i = self._skip(i)
                if self.text[i] == ",":
                    i = self._skip(i + 1)
            return items, i + 1
        return self._decoder.raw_decode(self.text, i)
