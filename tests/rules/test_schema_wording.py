"""Schema errors are worded by kvgen: no pydantic phrasing ("Input should be a valid integer",
"Field required", ...) reaches users, on the whole lint corpus and on mutated specs."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kvgen._lint.linter import lint_paths
from kvgen._spec.composer import SourceMap
from kvgen._spec.loader import parse_yaml
from kvgen._spec.models import Family
from kvgen._spec.schema_errors import describe, schema_keys, validation_diagnostics
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "lint_corpus"
VALID_SPECS = sorted([*(ROOT / "schema" / "families").glob("*.yaml"), *CORPUS.glob("valid_*.yaml")])
PYDANTIC_PHRASES = re.compile(
    r"Input should|should be|should have|Field required|Extra inputs|Value error|"
    r"valid dictionary|instance of|\[type=|pydantic|Assertion failed|Input tag",
    re.IGNORECASE,
)
# A value of every JSON type, and numbers on both sides of every bound.
REPLACEMENTS: tuple[Any, ...] = ("x", "Not An Identifier", -1, 0, 10**12, 1.5, True, None, [], {})


def _paths(data: Any, loc: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield loc, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*loc, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _paths(value, (*loc, i))


def _set(data: Any, loc: tuple, value: Any) -> Any:
    out = copy.deepcopy(data)
    if not loc:
        return value
    target = out
    for part in loc[:-1]:
        target = target[part]
    target[loc[-1]] = value
    return out


def _delete(data: Any, loc: tuple) -> Any:
    out = copy.deepcopy(data)
    target = out
    for part in loc[:-1]:
        target = target[part]
    del target[loc[-1]]
    return out


def _mutants(data: dict) -> Iterator[Any]:
    for loc, value in _paths(data):
        if loc:
            for replacement in REPLACEMENTS:
                yield _set(data, loc, replacement)
            if isinstance(loc[-1], str):
                yield _delete(data, loc)
        if isinstance(value, dict):
            yield _set(data, (*loc, "bogus_key"), 1)
            for key in value:  # a misspelling of each key
                yield _set(_delete(data, (*loc, key)), (*loc, f"{key}x"), value[key])


def _messages(data: Any) -> list[str]:
    try:
        Family.model_validate(data)
    except ValidationError as exc:
        found = validation_diagnostics("s.yaml", exc, SourceMap(), data)
        assert found, "a refused spec always gets a diagnostic"
        return [f"{d.message} (fix: {d.fix})" for d in found]
    return []


@pytest.mark.parametrize("path", VALID_SPECS, ids=lambda p: p.name)
def test_no_pydantic_phrasing_on_mutated_specs(path):
    data, _source, diagnostics = parse_yaml(path.as_posix(), path.read_bytes())
    assert diagnostics == []
    refused = 0
    for mutant in _mutants(data):
        for message in _messages(mutant):
            refused += 1
            assert not PYDANTIC_PHRASES.search(message), message
    assert refused > 50  # the mutations do reach the schema


def test_no_pydantic_phrasing_on_the_lint_corpus():
    found = lint_paths([CORPUS])
    assert len(found) >= 60
    for diagnostic in found:
        assert not PYDANTIC_PHRASES.search(diagnostic.message), diagnostic.render()
        assert not PYDANTIC_PHRASES.search(diagnostic.fix), diagnostic.render()


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "null"), (True, "true"), ("8", "the string '8'"), ([], "a list"), ({}, "a mapping")],
)
def test_values_are_described_as_yaml_authors_write_them(value, text):
    assert describe(value) == text


def test_schema_keys_follow_lists_dicts_and_optionals():
    assert "tokens_per_block" in schema_keys(())
    assert "max_seq_len" in schema_keys(("models", 0))
    assert "window" in schema_keys(("models", 0, "layer_kinds", "local"))
    assert "layer_kinds" in schema_keys(("speculative", 0, "draft"))
    assert schema_keys(("models", 0, "name")) == ()
