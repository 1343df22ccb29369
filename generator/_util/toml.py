"""Reading TOML that a pull request or a stranger may have written: kvgen's configuration
(``pyproject.toml`` / ``kvgen.toml``), also as committed at a git ref, and deployment files.

``loads`` is the one way in: text is UTF-8 (``decode``), follows the line rule (KV015: only
``\\n`` ends a line, so every position below is the one git shows), nests at most
``MAX_TOML_DEPTH`` levels (``nesting``), and only then goes to ``tomllib``. Every problem is a
``UsageError`` at ``file:line:col``; nothing is ever a traceback.

Why a nesting bound before parsing: ``tomllib`` recurses once per array or inline-table level
(1,000 ``[`` are a ``RecursionError``), and walks a dotted key's tables once per part for every
part (a key of 16,000 parts took 6 s, quadratic; 1 MiB of them hours). A configuration nests
four levels (``tool.kvgen.deployment.engine``), so 32 is generous for every other tool's table
in a ``pyproject.toml`` too.

``position`` finds a key for a diagnostic (TOML has no source map). Everything here is linear
in the text: no regex with overlapping repetitions (issue 29, D1 and D2).
"""

from __future__ import annotations

import contextlib
import gc
import re
import sys
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate, count, islice
from operator import indexOf, sub
from typing import Any

from kvgen._util.exits import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 takes the backport (a conditional dependency)
    import tomli as tomllib

__all__ = [
    "MAX_TOML_DEPTH",
    "check_lines",
    "check_nesting",
    "decode",
    "error_message",
    "header_line",
    "line_col",
    "loads",
    "nesting",
    "position",
    "tomllib",
]

MAX_TOML_DEPTH = 32  # arrays and inline tables inside each other, or parts of one dotted key

# A string or a comment, matched whole so that the brackets, dots and separators inside it are
# not read as TOML's. Each form also matches when it is never closed (to the end of the line or
# of the text): a match never fails once it started, so the scan never retries (linear). An
# unclosed string is invalid TOML, which tomllib then reports at its position.
_STRING_OR_COMMENT = re.compile(
    r'"""(?:[^"\\]|\\.|"{1,2}(?!"))*(?:"{3,5})?'  # multi-line basic: 1-2 quotes inside
    r"|'''(?:[^']|'{1,2}(?!'))*(?:'{3,5})?"  # multi-line literal
    r'|"(?:[^"\\\n]|\\.)*"?'  # basic
    r"|'[^'\n]*'?"  # literal
    r"|#[^\n]*",  # comment
    re.DOTALL,
)
_BRACKET = re.compile(r"[\[\]{}]")
# Byte tables for C-level passes over the skeleton (UTF-8: a multi-byte character never holds
# an ASCII byte): keep only brackets ("{" read as "[", "}" as "]"), or only dots and separators.
_ALL_BYTES = bytes(range(256))
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_ALL_BUT_BRACKETS = _ALL_BYTES.translate(None, b"[]{}")
_ALL_BUT_DOTS_AND_SEPARATORS = _ALL_BYTES.translate(None, b".=,[]{}\n")
# A key's parts are separated by dots; a key (or a value) ends at one of TOML's separators. A
# value holds at most one dot (a float, a time), so a run of MAX_TOML_DEPTH dots between two
# separators is a dotted key of more than MAX_TOML_DEPTH parts.
_DOT_OR_SEPARATOR = re.compile(r"[.=,\[\]{}\n]")


def _nests_too_deep(brackets: bytes) -> bool:
    """Whether ``brackets`` (only ``[`` and ``]``) nest past ``MAX_TOML_DEPTH``. Each pass
    removes every innermost ``[]``, which lowers the deepest nesting by one; with
    ``MAX_TOML_DEPTH`` closers appended (for arrays left open at the end), an ``[`` is left
    after ``MAX_TOML_DEPTH`` passes exactly when something nests deeper. C-level replaces."""
    brackets += b"]" * MAX_TOML_DEPTH
    for _ in range(MAX_TOML_DEPTH):
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):
            break
        brackets = shorter
    return b"[" in brackets


_MARK = "\x00"  # a string or comment in the skeleton: NUL is never valid TOML text


def nesting(text: str) -> tuple[int, str] | None:
    """The offset and description of the first nesting past ``MAX_TOML_DEPTH`` (an array or
    inline table, or a dotted key), else None.

    Linear, in C-level passes: each string and comment becomes one ``_MARK`` in a skeleton (one
    regex substitution with a constant replacement); its brackets, and its dots between
    separators, are then checked as bytes; only a finding is located (prefix sums, the n-th
    match), and a skeleton offset maps back through the marks before it. tomllib stops at a
    NUL, so nothing after the first one is read.
    """
    text = text.partition(_MARK)[0]
    if text.count("[") + text.count("{") <= MAX_TOML_DEPTH and text.count(".") < MAX_TOML_DEPTH:
        return None  # the fast path: every configuration kvgen was written for
    skeleton = _STRING_OR_COMMENT.sub(_MARK, text)
    raw = skeleton.encode("utf-8", "surrogatepass")
    brackets = raw.translate(_AS_SQUARE, _ALL_BUT_BRACKETS)
    if _nests_too_deep(brackets):
        # Depth after the k-th bracket (k from 1) is sum(steps[:k]) - k, steps 2 ("[") or 0;
        # it moves by one, so the first bracket past the bound is the first at depth + 1.
        steps = brackets.translate(bytes.maketrans(b"[]", b"\x02\x00"))
        with contextlib.suppress(ValueError):  # a stray "]" first: tomllib stops there
            k = indexOf(map(sub, accumulate(steps), count(1)), MAX_TOML_DEPTH + 1)
            bracket = next(islice(_BRACKET.finditer(skeleton), k, None)).start()
            what = f"arrays or inline tables nest deeper than {MAX_TOML_DEPTH} levels"
            return _original(text, skeleton, bracket), what
    dots = raw.translate(None, _ALL_BUT_DOTS_AND_SEPARATORS)
    run = dots.find(b"." * MAX_TOML_DEPTH)
    if run >= 0:
        dot = next(islice(_DOT_OR_SEPARATOR.finditer(skeleton), run, None)).start()
        start = max(skeleton.rfind(separator, 0, dot) for separator in "=,[]{}\n") + 1
        start += len(skeleton[start:dot]) - len(skeleton[start:dot].lstrip(" \t"))
        what = f"a dotted key has more than {MAX_TOML_DEPTH} parts (each part nests a table)"
        return _original(text, skeleton, start), what
    return None


def _original(text: str, skeleton: str, at: int) -> int:
    """The offset in ``text`` of offset ``at`` of its skeleton (``at`` is not a mark)."""
    marks = skeleton.count(_MARK, 0, at)
    if not marks:
        return at
    last = next(islice(_STRING_OR_COMMENT.finditer(text), marks - 1, None))
    return last.end() + (at - skeleton.rfind(_MARK, 0, at) - 1)


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line (counted by ``\\n``) and column (in characters) of ``offset``."""
    start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - start + 1


def decode(display: str, raw: bytes) -> str:
    """UTF-8 text of a TOML file, or a ``UsageError`` at the first bad byte's line:col."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UsageError(f"{display}:{line}:{col}: not valid UTF-8 (save it as UTF-8)") from None


def error_message(display: str, exc: Exception) -> str:
    """``file:line:col: invalid TOML: ...`` (tomllib puts the position in its message)."""
    message = str(exc)
    match = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if match is None:
        return f"{display}:1:1: invalid TOML: {message}"
    reason = message[: match.start()].strip()
    return f"{display}:{match.group(1)}:{match.group(2)}: invalid TOML: {reason}"


def check_lines(display: str, text: str) -> None:
    """The line rule (KV015): U+2028, U+2029, U+0085 or a lone CR is a ``UsageError`` at its
    line and column, counted by ``\\n`` as git counts them (docs/security.md)."""
    from kvgen._util.lines import line_break_diagnostics

    breaks = line_break_diagnostics(display, text)
    if breaks:
        raise UsageError(breaks[0].render())


def check_nesting(display: str, text: str) -> None:
    """``nesting`` as a ``UsageError`` at the bracket or key that crosses the bound."""
    deep = nesting(text)
    if deep is not None:
        line, col = line_col(text, deep[0])
        raise UsageError(
            f"{display}:{line}:{col}: {deep[1]}; flatten it (kvgen's settings nest 4 levels)"
        )


def loads(display: str, text: str) -> dict[str, Any]:
    """``tomllib.loads`` after the line rule and the nesting bound; any problem a positioned
    ``UsageError``."""
    check_lines(display, text)
    check_nesting(display, text)
    collecting = gc.isenabled()
    gc.disable()  # tomllib builds a dict and a set per key part: 1 MiB of keys took 3x as long
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(error_message(display, exc)) from None
    except RecursionError:  # pragma: no cover - nesting() bounds it; kept as the last guard
        raise UsageError(
            f"{display}:1:1: TOML nests too deeply to read; flatten it (kvgen's settings nest 4 "
            "levels)"
        ) from None
    finally:
        if collecting:
            gc.enable()


# What `position` drops from a table or key name (TOML's blanks and quotes), and the characters
# a key before `=` may hold (bare keys, dots, quotes, blanks).
_DROPPED = str.maketrans("", "", " \t\"'")
_KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-\"' \t"


def _dotted(name: str) -> str:
    return name.translate(_DROPPED)


def _header_name(line: str) -> str | None:
    """The dotted name of a table header line (``[a.b]``, ``[[a]]``), or None."""
    body = line.lstrip(" \t")
    close = body.find("]")
    if not body.startswith("[") or close < 0:
        return None
    return _dotted(body[1:close].lstrip("["))


def _line_at(text: str, start: int) -> str:
    """The line that starts at ``start`` (without its ``\\n``)."""
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


def _lines_holding(text: str, needle: str) -> Iterator[tuple[int, int, str]]:
    """``(line number, offset, line)`` of each line that holds ``needle``, in order: found with
    ``str.find`` (linear, whatever the needle), each line once, numbers counted by ``\\n``."""
    number, counted = 1, 0
    found = text.find(needle) if needle else -1
    while found >= 0:
        start = text.rfind("\n", 0, found) + 1
        number += text.count("\n", counted, start)
        counted = start
        line = _line_at(text, start)
        yield number, start, line
        found = text.find(needle, start + len(line))


# The start of a line that opens a table header: "[" after blanks (a header is one line).
_HEADER_START = re.compile(r"^[ \t]*\[", re.MULTILINE)


def position(text: str, key: str, table: str) -> tuple[int, int]:
    """1-based line and column of ``key =`` inside ``[table]``, also when written as a dotted
    key (``kvgen.out =`` under ``[tool]``), or of the ``[table.key]`` header (1, 1 when neither
    is found); best effort: TOML has no source map.

    Lines end only at ``\\n`` (docs/security.md, "The line rule"). Linear in the text (issue
    29, D2: a regex with three overlapping blank runs was cubic on a line of spaces): only the
    lines that hold ``key`` are read, each against the last header above it."""
    wanted = _dotted(f"{table}.{key}".strip("."))
    headers = [match.start() for match in _HEADER_START.finditer(text)]
    header_at = None
    for number, start, line in _lines_holding(text, key):
        body = line.lstrip(" \t")
        indent = len(line) - len(body)
        name = _header_name(line)
        if name is not None:
            if name == wanted and header_at is None:
                header_at = (number, indent + 1)
            continue
        above = bisect_right(headers, start) - 1
        current = (_header_name(_line_at(text, headers[above])) or "") if above >= 0 else ""
        dotted, equals, _ = body.partition("=")
        is_key = equals and dotted.strip(" \t") and not dotted.strip(_KEY_CHARS)
        if is_key and f"{current}.{_dotted(dotted)}".strip(".") == wanted:
            return number, indent + 1
    return header_at or (1, 1)


def header_line(text: str, table: str) -> int:
    """The line of the ``[table]`` header (lines end only at ``\\n``), or 1."""
    wanted = _dotted(table)
    for number, _, line in _lines_holding(text, table.rsplit(".", 1)[-1].strip(" \t\"'")):
        if _header_name(line) == wanted:
            return number
    return 1
