"""Per-line suppression (``# kvgen: noqa``) and rule selection (``--select``/``--ignore``).

A comment ``# kvgen: noqa: KV216, KV202`` suppresses those lint findings on its line; a bare
``# kvgen: noqa`` suppresses every lint finding on it. Only lint rules (KV2xx) can be
suppressed or deselected: a finding of reading the file or of the schema means the spec does
not load, and nothing downstream can use it. A comment that suppresses nothing, or names a
code that is not a lint rule, is itself a KV014 warning (as ruff's unused-noqa).

Selection takes code prefixes as ruff does: ``KV2`` every lint rule, ``KV21`` KV210-KV219,
``KV216`` one rule. A code is on when the longest selected prefix that matches it is longer
than the longest ignored one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kvgen._util.codes import reader as codes
from kvgen._util.diagnostics import Diagnostic
from kvgen._util.exits import UsageError

__all__ = ["Directive", "Selection", "directives", "suppress"]

# `#` opens a YAML comment at the start of a line or after a space; codes are code-shaped
# words separated by commas or spaces, so a reason may follow them.
_NOQA = re.compile(
    r"(?:^|(?<=\s))(?P<hash>#)\s*kvgen:\s*noqa\b"
    r"(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Za-z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_SUPPRESSIBLE = "KV2"  # lint rules; the KV014 warning itself is deselectable but not suppressible


@dataclass(frozen=True)
class Directive:
    """One ``# kvgen: noqa`` comment: where its ``#`` is, and the codes it names (none: all)."""

    line: int
    col: int
    codes: tuple[str, ...]


def directives(raw: bytes) -> list[Directive]:
    """Every noqa comment of a spec's bytes (cheap when there is none)."""
    if b"noqa" not in raw.lower():
        return []
    found = []
    text = raw.decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        match = _NOQA.search(line)
        if match is not None:
            named = re.split(r"[\s,]+", match.group("codes") or "")
            found.append(
                Directive(number, match.start("hash") + 1, tuple(c.upper() for c in named if c))
            )
    return found


def _covers(directive: Directive, diagnostic: Diagnostic) -> bool:
    return (
        diagnostic.line == directive.line
        and diagnostic.code.startswith(_SUPPRESSIBLE)
        and (not directive.codes or diagnostic.code in directive.codes)
    )


def suppress(
    path: str, diagnostics: Sequence[Diagnostic], found: Sequence[Directive]
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """``(kept, suppressed)``: ``kept`` gains a KV014 warning for each comment (or code in
    it) that suppresses nothing."""
    if not found:
        return list(diagnostics), []
    from kvgen._lint.rules import find_code

    kept: list[Diagnostic] = []
    suppressed: list[Diagnostic] = []
    for diagnostic in diagnostics:
        covered = any(_covers(directive, diagnostic) for directive in found)
        (suppressed if covered else kept).append(diagnostic)
    for directive in found:
        at = (directive.line, directive.col)
        hits = {d.code for d in suppressed if d.line == directive.line}
        if not directive.codes and not hits:
            kept.append(codes.UNUSED_NOQA.at(path, at, "'# kvgen: noqa' suppresses nothing"))
        for code in directive.codes:
            known = find_code(code)
            if not code.startswith(_SUPPRESSIBLE) or known is None:
                what = "an unknown code" if known is None else "not a lint rule (KV2xx)"
                message = f"{code} in '# kvgen: noqa' is {what}: it cannot be suppressed"
                kept.append(codes.UNUSED_NOQA.at(path, at, message))
            elif code not in hits:
                message = f"{code} is not reported on this line: its noqa suppresses nothing"
                kept.append(codes.UNUSED_NOQA.at(path, at, message))
    return sorted(kept), sorted(suppressed)


class Selection:
    """``--select``/``--extend-select``/``--ignore`` as code prefixes (default: every code)."""

    def __init__(
        self,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] = (),
        extend_select: Iterable[str] = (),
        known: Iterable[str] = (),
    ):
        known = tuple(known)
        self.select = _prefixes([*(select or ["KV"]), *extend_select], known)
        self.ignore = _prefixes(ignore, known)

    def __call__(self, code: str) -> bool:
        """Whether findings of ``code`` are reported (loader and schema codes always are)."""
        if not (code.startswith(_SUPPRESSIBLE) or code == codes.UNUSED_NOQA.code):
            return True
        return _longest(self.select, code) > _longest(self.ignore, code)


def _longest(prefixes: Iterable[str], code: str) -> int:
    return max((len(prefix) for prefix in prefixes if code.startswith(prefix)), default=-1)


def _prefixes(values: Iterable[str], known: Sequence[str]) -> tuple[str, ...]:
    """Upper-cased prefixes, split on commas; one that starts no known code is a usage error."""
    out = []
    for value in values:
        for prefix in filter(None, (part.strip().upper() for part in value.split(","))):
            if known and not any(code.startswith(prefix) for code in known):
                from kvgen._util.suggest import did_you_mean

                hint = did_you_mean(prefix, known)
                raise UsageError(f"unknown code or prefix {prefix!r}{hint}")
            out.append(prefix)
    return tuple(out)
