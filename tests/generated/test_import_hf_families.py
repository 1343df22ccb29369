"""``kvgen import-hf`` on a shipped family's published config.json (the fixture under
tests/fixtures/hf, written out from the published values) reproduces that family's costs
exactly: every manager's slope and intercept, both semantics, over a grid of runtime
parameters (docs/cost-model.md §1-§4). One row per (fixture, family, model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kvgen import costmodel
from kvgen.importhf import import_config
from kvgen.lint import lint_loaded
from kvgen.loader import load_bytes, load_family

ROOT = Path(__file__).resolve().parents[2]

# (fixture under tests/fixtures/hf, shipped family, model of that family).
PAIRS = [
    ("llama-3.2-11b-vision.json", "llama3_2_vision", "llama3_2_11b_vision"),
]

GRID = [
    {"max_batch_size": 1, "max_num_tokens": 1, "max_seq_len": 1},
    {"max_batch_size": 8, "max_num_tokens": 8192, "max_seq_len": 8192},
    {"max_batch_size": 3, "max_num_tokens": 100, "max_seq_len": 131072, "tp_size": 8},
    {"max_batch_size": 5, "max_num_tokens": 77, "max_seq_len": 4097, "pp_size": 3, "pp_rank": 1},
]


def _imported(fixture: str, family: str, model: str):
    path = ROOT / "tests" / "fixtures" / "hf" / fixture
    result = import_config(
        f"tests/fixtures/hf/{fixture}",
        path.read_text(encoding="utf-8"),
        family=family,
        model=model,
        tokens_per_block=load_family(
            ROOT / "schema" / "families" / f"{family}.yaml"
        ).tokens_per_block,
    )
    assert [d.render() for d in result.diagnostics] == []
    assert result.text is not None
    loaded = load_bytes(f"{family}.yaml", result.text.encode())
    assert loaded.diagnostics == []
    assert [d.render() for d in lint_loaded(loaded)] == []
    assert loaded.family is not None
    return loaded.family


@pytest.mark.parametrize(("fixture", "family", "model"), PAIRS)
def test_import_reproduces_the_shipped_costs(fixture, family, model):
    shipped = load_family(ROOT / "schema" / "families" / f"{family}.yaml")
    imported = _imported(fixture, family, model)
    for params in GRID:
        for semantics in costmodel.SEMANTICS:
            runtime = costmodel.RuntimeParams(semantics=semantics, **params)
            ours = costmodel.cache_costs(imported, model, "none", runtime)
            theirs = costmodel.cache_costs(shipped, model, "none", runtime)
            assert {k: (c.slope, c.intercept) for k, c in ours.items()} == {
                k: (c.slope, c.intercept) for k, c in theirs.items()
            }, (params, semantics)


def test_import_reproduces_the_encoder_tokens_keyword():
    fixture, family, model = PAIRS[0]
    shipped = load_family(ROOT / "schema" / "families" / f"{family}.yaml")
    imported = _imported(fixture, family, model)
    for tokens in (1, 1601, 6404):
        runtime = costmodel.RuntimeParams(8, 8192, 8192, encoder_tokens=tokens)
        ours = costmodel.cache_costs(imported, model, "none", runtime)["target"]
        theirs = costmodel.cache_costs(shipped, model, "none", runtime)["target"]
        assert (ours.slope, ours.intercept) == (theirs.slope, theirs.intercept)
