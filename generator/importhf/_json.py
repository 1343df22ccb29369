"""A JSON reader that records where each key and value starts (line:col), for diagnostics."""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

__all__ = ["JsonReader", "Path_"]

Path_ = tuple[str | int, ...]


class JsonReader:
    """Parse JSON already known to be valid, recording each key's and value's line:col."""

    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.keys: dict[Path_, tuple[int, int]] = {}
        self.values: dict[Path_, tuple[int, int]] = {}
        self.duplicates: list[tuple[Path_, tuple[int, int]]] = []
        self._decoder = json.JSONDecoder()

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
                key, end = json.decoder.scanstring(self.text, i + 1)
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
