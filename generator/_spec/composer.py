"""The YAML composer: the parser's event stream to plain values, with every position kept.

PyYAML's composer (C or Python) builds node trees recursively: a few thousand nested brackets
overflow the C stack (a segfault, not an exception). This composer consumes the *events*
(which the parser produces with an explicit stack) in one loop with its own bounded stack, so
no input can recurse: nesting deeper than ``MAX_DEPTH`` is refused at the event that crosses
it, before anything below it is built.

Only what YAML 1.2's core schema defines reaches the schema: null, true/false, integers,
finite floats, strings, mappings and sequences. ``yes``, ``on`` and ``2024-01-01`` stay
strings; an explicit core tag must match its value (``!!bool yes`` is refused, never
``False``); ``.nan``/``.inf``, floats that overflow and integers longer than
``MAX_INT_DIGITS`` are refused with a position. Aliases share their anchor's value and count
its size towards ``MAX_NODES`` (alias bombs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

import yaml
from kvgen._util.codes import Code
from kvgen._util.codes import reader as codes
from kvgen._util.diagnostics import Diagnostic, Loc

try:  # the C parser is several times faster; fall back to pure Python where absent
    _Parser: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Parser = yaml.SafeLoader

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_NODES", "SourceMap", "Unreadable", "compose"]

MAX_NODES = 100_000  # values built, aliases expanded included (alias bombs)
MAX_DEPTH = 64  # nested mappings/sequences; a spec needs 6
MAX_INT_DIGITS = 20  # int64 has 19; Python refuses int() of more than 4300 digits

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), in resolution order.
_CORE: tuple[tuple[str, re.Pattern[str]], ...] = (
    (_NULL, re.compile(r"(?:~|null|Null|NULL|)")),
    (_BOOL, re.compile(r"(?:true|True|TRUE|false|False|FALSE)")),
    (_INT, re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)")),
    (
        _FLOAT,
        re.compile(
            r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"
        ),
    ),
)
_CORE_BY_TAG = dict(_CORE)
# The same, as one pattern: the matching group's index names the tag (one match per scalar).
_IMPLICIT = re.compile("|".join(f"({pattern.pattern})" for _tag, pattern in _CORE))
_IMPLICIT_TAGS = {i + 1: tag for i, (tag, _pattern) in enumerate(_CORE)}


@dataclass
class SourceMap:
    """Positions (1-based line, col) of every value and every mapping key, by path."""

    values: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Loc, tuple[int, int]] = field(default_factory=dict)

    def value(self, loc: Loc) -> tuple[int, int]:
        """Position of the value at ``loc``, or of its nearest existing ancestor."""
        while loc not in self.values and loc:
            loc = loc[:-1]
        return self.values.get(loc, (1, 1))

    def key(self, loc: Loc) -> tuple[int, int]:
        """Position of the key that names ``loc`` (falls back to the value's position)."""
        return self.keys.get(loc) or self.value(loc)


class Unreadable(Exception):
    """The file cannot be read as a spec at all; carries the one diagnostic that says why."""

    def __init__(self, diagnostic: Diagnostic):
        self.diagnostic = diagnostic


def _at(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


class _Frame:
    """A mapping or sequence being built. ``loc`` is None where positions are not recorded
    (inside keys, and inside values that are dropped after a diagnostic)."""

    __slots__ = ("anchor", "at", "drop_next", "is_map", "key", "loc", "size", "value")

    def __init__(
        self,
        value: dict[str, Any] | list[Any],
        loc: Loc | None,
        anchor: str | None,
        at: tuple[int, int],
    ):
        self.value = value
        self.is_map = isinstance(value, dict)
        self.loc = loc
        self.at = at
        self.anchor = anchor
        self.size = 1
        self.key: Any = _NO_KEY  # mappings: the key whose value comes next
        self.drop_next = False  # mappings: the next value belongs to a refused key


_NO_KEY = object()


class _Composer:
    def __init__(self, path: str):
        self.path = path
        self.source = SourceMap()
        self.diagnostics: list[Diagnostic] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.nodes = 0
        self.stack: list[_Frame] = []
        self.root: Any = None
        self.root_at = (1, 1)

    def report(self, code: Code, at: tuple[int, int], message: str) -> None:
        self.diagnostics.append(code.at(self.path, at, message))

    def fail(
        self, code: Code, at: tuple[int, int], message: str, fix: str | None = None
    ) -> NoReturn:
        raise Unreadable(code.at(self.path, at, message, fix))

    # -- where the next value goes

    def child_loc(self) -> Loc | None:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if top.loc is None:
            return None
        if isinstance(top.value, list):
            return (*top.loc, len(top.value))
        if top.key is _NO_KEY or top.drop_next:
            return None  # a key, or the value of a refused key
        return (*top.loc, top.key)

    def count(self, size: int, at: tuple[int, int], loc: Loc | None) -> None:
        self.nodes += size
        if self.nodes > MAX_NODES:
            top = loc if loc is not None else next((f.loc for f in self.stack if f.loc), ())
            where = f" in '{top[0]}'" if top else ""
            self.fail(
                codes.TOO_LARGE,
                self.source.value(top[:1]) if top else at,
                f"document expands to more than {MAX_NODES} values{where} (alias bomb?)",
            )

    def deliver(self, value: Any, size: int, at: tuple[int, int], is_key_ok: bool = True) -> None:
        """A complete value: into the enclosing collection, or the document root."""
        if not self.stack:
            self.root, self.root_at = value, at
            return
        top = self.stack[-1]
        top.size += size
        if isinstance(top.value, list):
            top.value.append(value)
            return
        if top.key is _NO_KEY:  # the value is a key
            top.key, top.drop_next = value, False
            if not is_key_ok:
                top.drop_next = True
            elif not isinstance(value, str):
                kind = "mapping" if isinstance(value, dict) else type(value).__name__
                self.report(codes.NON_STRING_KEY, at, f"mapping keys must be strings, found {kind}")
                top.drop_next = True
            elif value in top.value:
                first = self.source.keys.get((*top.loc, value)) if top.loc is not None else None
                line = f" (first defined at line {first[0]})" if first else ""
                self.report(codes.DUPLICATE_KEY, at, f"duplicate key '{value}'{line}")
                top.drop_next = True
            elif top.loc is not None:
                self.source.keys[(*top.loc, value)] = at
            return
        if not top.drop_next:
            top.value[top.key] = value
        top.key, top.drop_next = _NO_KEY, False

    # -- events

    def start(self, event: Any, container: dict[str, Any] | list[Any], core_tag: str) -> None:
        at = _at(event.start_mark)
        if len(self.stack) >= MAX_DEPTH:
            self.fail(
                codes.TOO_LARGE,
                at,
                f"document nests deeper than {MAX_DEPTH} levels",
                "flatten the document; a spec nests 6 levels deep",
            )
        if event.tag not in (None, "!", core_tag):
            self.report(codes.UNSUPPORTED_YAML, at, f"unsupported YAML tag {event.tag}")
        loc = self.child_loc()
        if loc is not None:
            self.source.values.setdefault(loc, at)
        self.count(1, at, loc)
        self.stack.append(_Frame(container, loc, event.anchor, at))

    def end(self) -> None:
        frame = self.stack.pop()
        if frame.anchor is not None:
            self.anchors[frame.anchor] = (frame.value, frame.size)
        self.deliver(frame.value, frame.size, frame.at)

    def alias(self, event: Any) -> None:
        at = _at(event.start_mark)
        if event.anchor not in self.anchors:
            self.fail(codes.YAML_SYNTAX, at, f"YAML syntax error: undefined alias '{event.anchor}'")
        value, size = self.anchors[event.anchor]
        loc = self.child_loc()
        if loc is not None:
            self.source.values.setdefault(loc, at)
        self.count(size, at, loc)
        self.deliver(value, size, at)

    def scalar(self, event: Any) -> None:
        # The hot path (most events are plain scalars inside a mapping or sequence): kept
        # inline; the generic ``deliver`` handles the rest.
        mark = event.start_mark
        at = (mark.line + 1, mark.column + 1)
        tag = event.tag
        text = event.value
        plain = event.implicit[0] and (tag is None or tag == "!")
        if not self.stack or event.anchor is not None:
            self.count(1, at, self.child_loc())
            value = self.value_of(tag, text, plain, at)
            if event.anchor is not None:
                self.anchors[event.anchor] = (value, 1)
            loc = self.child_loc()
            if loc is not None:
                self.source.values.setdefault(loc, at)
            self.deliver(value, 1, at)
            return
        top = self.stack[-1]
        if top.is_map and top.key is _NO_KEY:  # a key
            if plain and text not in top.value and _IMPLICIT.fullmatch(text) is None:
                self.nodes += 1  # a new plain string key: by far the most common key
                if self.nodes > MAX_NODES:
                    self.count(0, at, top.loc)
                top.size += 1
                top.key, top.drop_next = text, text == "<<"
                if text == "<<":
                    self.report(codes.UNSUPPORTED_YAML, at, "merge keys (<<) are not supported")
                elif top.loc is not None:
                    self.source.keys[(*top.loc, text)] = at
                return
            if tag == _MERGE or (plain and text == "<<"):
                self.report(codes.UNSUPPORTED_YAML, at, "merge keys (<<) are not supported")
                self.count(1, at, None)
                self.deliver(None, 1, at, is_key_ok=False)
                return
            self.count(1, at, None)
            self.deliver(self.value_of(tag, text, plain, at), 1, at)
            return
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.count(0, at, top.loc)
        value = self.value_of(tag, text, plain, at)
        top.size += 1
        if top.is_map:
            if not top.drop_next:
                if top.loc is not None:
                    self.source.values.setdefault((*top.loc, top.key), at)
                top.value[top.key] = value
            top.key, top.drop_next = _NO_KEY, False
        else:
            if top.loc is not None:
                self.source.values.setdefault((*top.loc, len(top.value)), at)
            top.value.append(value)  # type: ignore[union-attr]  # not is_map: a list

    def value_of(self, tag: str | None, text: str, plain: bool, at: tuple[int, int]) -> Any:
        if plain:
            match = _IMPLICIT.fullmatch(text)
            if match is None:
                return text
            assert match.lastindex is not None  # each alternative of _IMPLICIT is a group
            return self.typed(_IMPLICIT_TAGS[match.lastindex], text, at)
        if tag is None or tag == "!":
            return text  # quoted, or the non-specific tag `!`: a string
        if tag in _CORE_BY_TAG and not _CORE_BY_TAG[tag].fullmatch(text):
            self.report(
                codes.TAG_VALUE_MISMATCH,
                at,
                f"{text!r} is not a valid !!{tag.rsplit(':', 1)[1]} in YAML 1.2",
            )
            return None
        return self.typed(tag, text, at)

    def typed(self, tag: str, text: str, at: tuple[int, int]) -> Any:
        """``text`` read as core type ``tag`` (whose pattern it matches)."""
        if tag == _NULL:
            return None
        if tag == _STR:
            return text
        if tag == _BOOL:
            return text.lower() == "true"
        if tag == _INT:
            return self.integer(text, at)
        if tag == _FLOAT:
            return self.real(text, at)
        self.report(codes.UNSUPPORTED_YAML, at, f"unsupported YAML tag {tag}")
        return None

    def integer(self, text: str, at: tuple[int, int]) -> int | None:
        if len(text) <= MAX_INT_DIGITS and text[1:2] not in ("o", "x"):
            return int(text)  # decimal and short: the common case
        digits = text.lstrip("+-")
        base = {"0o": 8, "0x": 16}.get(digits[:2], 10)
        if base != 10:
            digits = digits[2:]
        if len(digits) > MAX_INT_DIGITS:
            self.report(
                codes.UNREPRESENTABLE_NUMBER,
                at,
                f"integer of {len(digits)} digits is out of range "
                f"(kvgen reads at most {MAX_INT_DIGITS})",
            )
            return None
        return int(text) if base == 10 else int(digits, base)  # hex and octal carry no sign

    def real(self, text: str, at: tuple[int, int]) -> float | None:
        lowered = text.lower()
        if "nan" in lowered or "inf" in lowered:
            self.report(
                codes.UNREPRESENTABLE_NUMBER,
                at,
                f"{text} is not a finite number; spec values are finite",
            )
            return None
        value = float(text)
        if not math.isfinite(value):
            self.report(codes.UNREPRESENTABLE_NUMBER, at, f"{text} overflows a float")
            return None
        return value


def _syntax_error(path: str, exc: yaml.YAMLError) -> NoReturn:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context:
            problem = f"{exc.problem} ({exc.context})"
        raise Unreadable(codes.YAML_SYNTAX.at(path, _at(mark), f"YAML syntax error: {problem}"))
    raise Unreadable(codes.YAML_SYNTAX.at(path, (1, 1), f"YAML error: {exc}"))


def compose(path: str, text: str) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Text to plain values and positions. Reader problems that stop reading raise
    ``Unreadable``; the others are returned as diagnostics (and their values dropped)."""
    composer = _Composer(path)
    parser = _Parser(text)
    documents = 0
    get_event = parser.get_event
    scalar, end = composer.scalar, composer.end
    try:
        while True:
            event = get_event()
            kind = type(event)
            if kind is yaml.ScalarEvent:
                scalar(event)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                end()
            elif kind is yaml.MappingStartEvent:
                composer.start(event, {}, _MAP)
            elif kind is yaml.SequenceStartEvent:
                composer.start(event, [], _SEQ)
            elif kind is yaml.AliasEvent:
                composer.alias(event)
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    composer.fail(
                        codes.YAML_SYNTAX,
                        _at(event.start_mark),
                        "YAML syntax error: but found another document "
                        "(expected a single document in the stream)",
                    )
            elif kind is yaml.StreamEndEvent:
                break
    except yaml.YAMLError as exc:
        _syntax_error(path, exc)
    finally:
        parser.dispose()
    if documents == 0:
        composer.fail(codes.NOT_A_MAPPING, (1, 1), "file is empty")
    composer.source.values.setdefault((), composer.root_at)
    return composer.root, composer.source, composer.diagnostics
