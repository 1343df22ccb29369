"""Canonical code layout: Python values and call trees written as ``ruff format`` writes them.

Generation writes the tables of ``generated/<family>/sizing.py`` and ``allocator.py`` itself
instead of running a formatter, so rendering needs no subprocess and no formatter version pin
(``tests/generated/test_render_canonical.py`` checks that ruff leaves the output unchanged).
Both table builders describe their code with the same three node types and lay it out here:

* ``Call(name, args)``: ``name(key=value, ...)``; an argument with an empty key is positional.
* ``Seq(open, close, items)``: a tuple, list or subscript.
* ``Dict(items)``: a dict display.
* ``Runs(seq, short)``: a tuple of names with repeats, also writable as its runs
  (``("a",) * 5 + ("b",) * 3``): the short form is used where the tuple does not fit on its
  line but the runs do, so a 60-layer pattern reads as one line instead of sixty.

A node that fits on its line stays on it. One that does not is split the way ruff splits it:
a call first tries its arguments on one indented line; otherwise every item goes on its own
line with a trailing comma (which also keeps ruff from joining it again). ``explode=True``
asks for one item per line even when the node would fit (a table meant to be read per row).
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

from kvgen._generate.render_input import scalar_literal

__all__ = [
    "INDENT",
    "LINE_LENGTH",
    "Call",
    "Code",
    "Dict",
    "Runs",
    "Seq",
    "flat",
    "literal",
    "statement",
]

LINE_LENGTH = 100
INDENT = 4


class Call(NamedTuple):
    """``name(key=value, ...)``; an empty key writes its value positionally."""

    name: str
    args: tuple[tuple[str, Code], ...]
    explode: bool = False


class Seq(NamedTuple):
    """A bracketed sequence (tuple, list, subscript) of code items."""

    open: str
    close: str
    items: tuple[Code, ...]
    explode: bool = False


class Dict(NamedTuple):
    items: tuple[tuple[Code, Code], ...]
    explode: bool = False


class Runs(NamedTuple):
    """A tuple of names and the same tuple written as its runs (``short``)."""

    seq: Seq
    short: str


Code = str | Call | Seq | Dict | Runs


def _runs(names: tuple[str, ...]) -> str:
    """``("a",) * 2 + ("b",)``: each run of equal names once, with its length."""
    runs = ((name, len(list(run))) for name, run in itertools.groupby(names))
    return " + ".join(
        f"({scalar_literal(name)},)" + (f" * {count}" if count != 1 else "") for name, count in runs
    )


def literal(
    value: Any, positional_first: tuple[type, ...] = (), named: dict[Any, str] | None = None
) -> Code:
    """``value`` as code: scalars in the one quoting rule (``scalar_literal``), tuples, dicts
    and rows (anything with NamedTuple-style ``_fields``) as calls of their type that name the
    fields not at their default. Rows of a type in ``positional_first`` write their first
    field positionally (a tag such as a layer kind's attention). A row in ``named`` (rows
    written once as module constants) is written as its name."""
    if hasattr(value, "_fields") and not isinstance(value, type):
        if named:
            try:
                return named[value]
            except (KeyError, TypeError):  # not named, or a row holding a dict (unhashable)
                pass
        defaults = _field_defaults(type(value))
        args: list[tuple[str, Code]] = []
        for i, field in enumerate(value._fields):
            item = getattr(value, field)
            if i == 0 and isinstance(value, positional_first):
                args.append(("", literal(item, positional_first, named)))
            elif field not in defaults or defaults[field] != item:
                args.append((field, literal(item, positional_first, named)))
        return Call(type(value).__name__, tuple(args))
    if isinstance(value, tuple):
        seq = Seq("(", ")", tuple(literal(v, positional_first, named) for v in value))
        names = all(isinstance(v, str) for v in value)
        if names and any(a == b for a, b in itertools.pairwise(value)):
            return Runs(seq, _runs(value))
        return seq
    if isinstance(value, dict):
        items = tuple(
            (literal(k, positional_first, named), literal(v, positional_first, named))
            for k, v in value.items()
        )
        return Dict(items)
    return scalar_literal(value)


def _field_defaults(row_type: type) -> dict[str, Any]:
    """A row type's defaults by field: a NamedTuple's own, or its constructor's."""
    if hasattr(row_type, "_field_defaults"):
        return dict(row_type._field_defaults)
    # A runtime record (``_Record``): its fields and its constructor's defaults, which mypy
    # cannot see on a plain ``type``.
    names: tuple[str, ...] = row_type._fields  # type: ignore[attr-defined]
    values = row_type.__init__.__defaults__ or ()  # type: ignore[misc]
    return dict(zip(names[len(names) - len(values) :], values, strict=True))


def flat(code: Code) -> str:
    """The one-line form of ``code``."""
    if isinstance(code, str):
        return code
    if isinstance(code, Runs):
        return flat(code.seq)
    if isinstance(code, Call):
        args = (f"{key}={flat(value)}" if key else flat(value) for key, value in code.args)
        return code.name + "(" + ", ".join(args) + ")"
    if isinstance(code, Dict):
        return "{" + ", ".join(f"{flat(k)}: {flat(v)}" for k, v in code.items) + "}"
    inner = ", ".join(flat(item) for item in code.items)
    single = code.open == "(" and len(code.items) == 1
    return code.open + inner + ("," if single else "") + code.close


def layout(code: Code, indent: int, column: int, tail: int) -> str:
    """``code`` as ruff formats it, starting at ``column`` of a line indented ``indent``,
    followed on its last line by ``tail`` characters (a comma, a closing bracket)."""
    one_line = flat(code)
    if isinstance(code, Runs):
        if column + len(one_line) + tail > LINE_LENGTH >= column + len(code.short) + tail:
            return code.short
        return layout(code.seq, indent, column, tail)
    if isinstance(code, str) or not (code.args if isinstance(code, Call) else code.items):
        return one_line
    if not code.explode and column + len(one_line) + tail <= LINE_LENGTH:
        return one_line
    inner_indent = " " * (indent + INDENT)
    if isinstance(code, Call):
        if not code.explode:
            inner = one_line[len(code.name) + 1 : -1]
            if indent + INDENT + len(inner) <= LINE_LENGTH:
                return f"{code.name}(\n{inner_indent}{inner}\n{' ' * indent})"
        heads = [(f"{key}=" if key else "", value) for key, value in code.args]
        return _exploded(code.name + "(", ")", heads, indent)
    if isinstance(code, Dict):
        heads = [(flat(key) + ": ", value) for key, value in code.items]
        return _exploded("{", "}", heads, indent)
    return _exploded(code.open, code.close, [("", item) for item in code.items], indent)


def _exploded(open_: str, close: str, heads: list[tuple[str, Code]], indent: int) -> str:
    inner = indent + INDENT
    lines = [open_]
    for head, value in heads:
        start = inner + len(head)
        lines.append(" " * inner + head + layout(value, inner, start, 1) + ",")
    lines.append(" " * indent + close)
    return "\n".join(lines)


def statement(target: str, code: Code) -> str:
    """``target = code`` at module level."""
    return f"{target} = " + layout(code, 0, len(target) + 3, 0)
