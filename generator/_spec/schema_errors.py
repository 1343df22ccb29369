"""The schema-error mapping: pydantic validation errors to positioned KV1xx diagnostics.

Every message is kvgen's own wording (pydantic's "Input should be ..." never reaches users),
anchored on the YAML node the error is about. An unknown key that is a misspelling of a
schema key becomes one diagnostic with a suggestion, instead of "unknown key" plus "missing
key" for the same typo.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from kvgen._spec.composer import SourceMap
from kvgen._spec.models import Family
from kvgen._util.codes import Code
from kvgen._util.codes import reader as codes
from kvgen._util.diagnostics import Diagnostic, Loc
from pydantic import BaseModel, ValidationError

__all__ = ["describe", "schema_keys", "validation_diagnostics"]

_CODES: dict[str, Code] = {
    "extra_forbidden": codes.UNKNOWN_KEY,
    "missing": codes.MISSING_KEY,
    "greater_than_equal": codes.OUT_OF_RANGE,
    "less_than_equal": codes.OUT_OF_RANGE,
    "greater_than": codes.OUT_OF_RANGE,
    "less_than": codes.OUT_OF_RANGE,
    "too_short": codes.OUT_OF_RANGE,
    "too_long": codes.OUT_OF_RANGE,
    "string_pattern_mismatch": codes.INVALID_IDENTIFIER,
    "string_too_long": codes.INVALID_IDENTIFIER,
    "literal_error": codes.INVALID_CHOICE,
    "value_error": codes.INVALID_COMBINATION,
}
_FIXES = {
    "too_short": "add at least one entry",
    "too_long": "shorten the list",
    "string_too_long": "use an identifier of at most 64 characters",
}
_EXPECTED = {  # pydantic type-error kinds -> what the schema expects there
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def describe(value: Any) -> str:
    """A value as a spec author wrote it: ``the string '128'``, ``a list``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation
            annotation = options[0]
        else:
            return annotation


def schema_keys(loc: Loc) -> tuple[str, ...]:
    """The keys the schema defines for the mapping at ``loc`` (empty when it is not a model)."""
    annotation: Any = Family
    for part in loc:
        annotation = _unwrap(annotation)
        origin = typing.get_origin(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return ()
            annotation = field.annotation
        elif origin is list and isinstance(part, int):
            annotation = typing.get_args(annotation)[0]
        elif origin is dict:
            annotation = typing.get_args(annotation)[1]
        else:
            return ()
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return tuple(annotation.model_fields)
    return ()


def _where(loc: Loc) -> str:
    return ".".join(str(part) for part in loc) or "<top>"


def _message(error: Any, loc: Loc) -> str:
    kind = error["type"]
    where = _where(loc)
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "extra_forbidden":
        return f"unknown key '{loc[-1]}' at {where}"  # wording other tools' tests match
    if kind == "missing":
        return f"missing required key '{loc[-1]}' in {_where(loc[:-1])}"
    if kind in _EXPECTED:
        return f"{where}: expected {_EXPECTED[kind]}, found {describe(value)}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        relation = "at least" if kind == "greater_than_equal" else "greater than"
        return f"{where}: {describe(value)} is too small; it must be {relation} {bound}"
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        relation = "at most" if kind == "less_than_equal" else "less than"
        return f"{where}: {describe(value)} is too large; it must be {relation} {bound}"
    if kind == "too_short":
        return (
            f"{where}: needs at least {ctx.get('min_length')} "
            f"entr{'y' if ctx.get('min_length') == 1 else 'ies'}, found {ctx.get('actual_length')}"
        )
    if kind == "too_long":
        return (
            f"{where}: allows at most {ctx.get('max_length')} entries, "
            f"found {ctx.get('actual_length')}"
        )
    if kind == "string_too_long":
        return f"{where}: {describe(value)} is longer than {ctx.get('max_length')} characters"
    if kind == "string_pattern_mismatch" and loc and loc[-1] == "architecture":
        return (
            f"{where}: {describe(value)} is not a model class name "
            f"({ctx.get('pattern')}, config.json architectures[0])"
        )
    if kind == "string_pattern_mismatch":
        return f"{where}: {describe(value)} is not a lowercase identifier (^[a-z][a-z0-9_]*$)"
    if kind == "literal_error":
        expected = str(ctx.get("expected"))
        choices = f"one of {expected}" if " or " in expected else expected
        return f"{where}: expected {choices}, found {describe(value)}"
    if kind == "value_error":
        return f"{where}: {ctx.get('error', '')}".rstrip(": ")
    return f"{where}: {describe(value)} is not valid here"


def _clean(raw_loc: tuple[Any, ...]) -> Loc:
    return tuple(p for p in raw_loc if p != "[key]" and not str(p).startswith("function-"))


def _present_keys(data: Any, loc: Loc) -> set[str]:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return set()
    return set(data) if isinstance(data, dict) else set()


def validation_diagnostics(
    path: str, exc: ValidationError, source: SourceMap, data: Any = None
) -> list[Diagnostic]:
    """Map pydantic errors back to YAML nodes, in kvgen's words."""
    from kvgen._util.suggest import closest  # difflib: only when a spec is refused

    errors = exc.errors(include_url=False)
    missing = {_clean(e["loc"]) for e in errors if e["type"] == "missing"}
    suggestions: dict[Loc, str] = {}
    for error in errors:
        loc = _clean(error["loc"])
        if error["type"] != "extra_forbidden" or not loc:
            continue
        parent = loc[:-1]
        unused = set(schema_keys(parent)) - _present_keys(data, parent)
        match = closest(str(loc[-1]), unused)
        if match is not None:
            suggestions[loc] = match
    replaced = {(*loc[:-1], match) for loc, match in suggestions.items()}
    out = []
    for error in errors:
        raw_loc = error["loc"]
        loc = _clean(raw_loc)
        kind = error["type"]
        if kind == "missing" and loc in replaced:
            continue  # said once, at the misspelt key
        code = _CODES.get(kind, codes.WRONG_TYPE)
        fix = _FIXES.get(kind, code.fix)
        if kind in ("string_pattern_mismatch", "string_too_long") and loc[-1:] == ("architecture",):
            fix = "copy the class name from the model's config.json architectures"
        message = _message(error, loc)
        if kind == "extra_forbidden" or "[key]" in raw_loc:
            at = source.key(loc)
        elif kind == "missing":
            at = source.value(loc[:-1])
        else:
            at = source.value(loc)
        if loc in suggestions:
            match = suggestions[loc]
            message += f" (did you mean {match!r}?)"
            fix = f"rename it to '{match}'"
            if (*loc[:-1], match) not in missing:
                fix = f"rename it to '{match}', or remove it"
        out.append(code.at(path, at, message, fix))
    return out
