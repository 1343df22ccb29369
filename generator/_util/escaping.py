"""One escaping function per output format, for every text a spec author controls.

Reasons, family and model names, paths and messages that quote spec values are untrusted
(``docs/security.md``): a reason of ``"ok\\n::error file=x::forged"`` must not become a second
line, a GitHub workflow command, a broken Markdown table or an HTML comment that hides the rest
of a pull-request comment. Every emitter (``kvgen._lint.reporters`` for lint,
``kvgen._review.reporters`` for diff) passes such text through the function of its format, and
through nothing else:

- ``text``: control, format and separator characters shown as Python escapes (``\\n``,
  ``\\x1b``, ``\\u2028``), and no workflow command can start (``::`` at the start, ``##[``);
- ``markdown`` (table cells, sentences) and ``markdown_code`` (an inline code span);
- ``github_data`` / ``github_property``: GitHub's workflow-command escaping (``%``, CR, LF; in
  properties also ``:`` and ``,``), other control characters as in ``text``;
- ``json_dumps``: JSON (SARIF too) with every control or separator character as ``\\uXXXX``.

Stdlib only and free of kvgen imports: ``kvgen._util.diagnostics`` uses it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

__all__ = [
    "github_data",
    "github_property",
    "is_control",
    "json_dumps",
    "markdown",
    "markdown_code",
    "text",
    "text_lines",
]


def is_control(char: str) -> bool:
    """Control, format, private, unassigned or separator characters (space excepted): any of
    them could end or disguise a line of output."""
    return char != " " and unicodedata.category(char)[0] in "CZ"


def _shown(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii") if is_control(char) else char


def _visible(value: str) -> str:
    """``value`` with every control character as its Python escape (``\\n``, ``\\u2028``)."""
    if value.isprintable():  # no C* or Z* character but the space: the fast path
        return value
    return "".join(map(_shown, value))


# A workflow command starts a line (after blanks) with ``::``; the runner's older syntax is
# ``##[command]`` anywhere in a line. Either is shown with its colon or bracket escaped.
_COMMAND_START = re.compile(r"^(\s*):")
_OLD_COMMAND = "##["


def text(value: str) -> str:
    """Plain-text output (terminal, CI log): one line, printable, no workflow command."""
    shown = _visible(value)
    if shown.lstrip().startswith("::"):
        shown = _COMMAND_START.sub(r"\1\\x3a", shown, count=1)
    return shown.replace(_OLD_COMMAND, "##\\x5b")


def text_lines(value: str) -> str:
    """kvgen's own lines of text (a report, a message) that quote untrusted values: each line
    as ``text`` shows it, so whatever a value held, no control character reaches the terminal
    and no line starts a workflow command. The values themselves should be ``text`` already
    (one line each); this is the last guard, at the stream."""
    if value.isprintable() and "::" not in value and _OLD_COMMAND not in value:
        return value  # one printable line that cannot hold a command: the fast path
    return "\n".join(text(line) for line in value.split("\n"))


# Characters that structure Markdown or HTML in a pull-request comment: table cells (|), code
# spans (`), HTML and comments (< > &), links and images ([ ] !), emphasis that could forge
# kvgen's own **no** (* ~), and the backslash that would otherwise undo an escape.
_MARKDOWN_ESCAPES = {
    "\\": "\\\\",
    "`": "\\`",
    "|": "\\|",
    "[": "\\[",
    "]": "\\]",
    "!": "\\!",
    "*": "\\*",
    "~": "\\~",
    "<": "&lt;",
    ">": "&gt;",
    "&": "&amp;",
}
_MARKDOWN_TABLE = str.maketrans(_MARKDOWN_ESCAPES)


# What GitHub turns into a link or a notification in a comment: a URL (``scheme://``, GFM's
# ``www.`` autolink, ``mailto:``/``xmpp:``), an e-mail address or @mention, an issue or pull
# request reference (``#12``, ``org/repo#12``, ``GH-12``). A word (a run of characters other
# than blanks, ``|`` and backticks) holding one goes into a code span, where GitHub links and
# notifies nothing and the word shows as written.
_WORD = re.compile(r"[^\s|`]+")
_LINKS = re.compile(r"[a-z0-9]://|www\.|@\w|#\d|\bgh-\d|\b(?:mailto|xmpp):", re.IGNORECASE)


def markdown(value: str) -> str:
    """Markdown text (a table cell, a sentence): one line, no HTML, no table break, no link, no
    autolink, mention or reference (such words in code spans)."""
    shown = text(value)
    if not _LINKS.search(shown):
        return shown.translate(_MARKDOWN_TABLE)
    parts, start = [], 0
    for word in _WORD.finditer(shown):
        if _LINKS.search(word.group()):
            parts += [shown[start : word.start()].translate(_MARKDOWN_TABLE), f"`{word.group()}`"]
            start = word.end()
    return "".join([*parts, shown[start:].translate(_MARKDOWN_TABLE)])


def markdown_code(value: str) -> str:
    """An inline code span: a fence longer than any run of backticks inside, padded when the
    value starts or ends with one (CommonMark), control characters escaped as in ``text``."""
    shown = text(value)
    runs = [len(run) for run in re.findall(r"`+", shown)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def _github_visible(value: str) -> str:
    """Control characters other than CR and LF as in ``text`` (GitHub escapes those two)."""
    if value.isprintable():
        return value
    return "".join(char if char in "\r\n" else _shown(char) for char in value)


def github_data(value: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped so it stays one command."""
    return _github_visible(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(value: str) -> str:
    """A workflow command's property value (file, title): also ``:`` and ``,`` escaped."""
    return github_data(value).replace(":", "%3A").replace(",", "%2C")


def _json_escape(match: re.Match[str]) -> str:
    # ensure_ascii: \\uXXXX, surrogate pairs beyond BMP
    return json.dumps(match.group(), allow_nan=False)[1:-1]


# Outside strings JSON text is ASCII, so any of these characters sits inside a string, where
# its \uXXXX escape means the same character.
_JSON_RAW = re.compile(r"[^\x20-\x7e\n]")


def json_dumps(data: Any) -> str:
    """``json.dumps(data, indent=2)`` keeping printable Unicode readable, every control, format
    or separator character (U+2028 included, which ends a line in JavaScript) escaped."""
    dumped = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    return _JSON_RAW.sub(lambda m: _json_escape(m) if is_control(m.group()) else m.group(), dumped)
