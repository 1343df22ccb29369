"""`kvgen import-hf` on a shipped family's published config.json reproduces the shipped spec's
costs exactly: the same layers (index, bytes per token, window, recurrent buffers) on every
tp and pipeline rank, and the same static cost per manager in both semantics
(docs/cost-model.md §1, §4, §8). The shipped specs are written by hand with a source comment
beside every number; the importer derives the same numbers from the config alone, so a
wrong number on either side shows up here."""

from __future__ import annotations

from pathlib import Path

import pytest
from kvgen.costmodel import RuntimeParams, cache_costs, pp_layer_range, stack_layers
from kvgen.importhf import import_config
from kvgen.lint import lint_loaded
from kvgen.loader import load_bytes, load_family
from kvgen.spec import Family

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
FAMILIES = ROOT / "schema" / "families"

# (config.json fixture, shipped family): the shipped spec names the fixture as its source.
PAIRS = [
    ("nemotron-h-8b", "nemotron_h"),
    ("qwen3-next-80b-a3b", "qwen3_next"),
    ("granite-4.0-h-tiny", "granite4"),
    ("jamba-1.5-mini", "jamba"),
]


def imported(fixture: str, shipped: Family) -> Family:
    path = FIXTURES / f"{fixture}.json"
    result = import_config(
        path.relative_to(ROOT).as_posix(),
        path.read_text(encoding="utf-8"),
        tokens_per_block=shipped.tokens_per_block,
    )
    assert [d.render() for d in result.diagnostics] == []
    assert result.text is not None
    loaded = load_bytes(f"{fixture}.yaml", result.text.encode())
    assert [d.render() for d in lint_loaded(loaded)] == []
    assert loaded.family is not None
    return loaded.family


def layer_shapes(family: Family, model: str, tp: int, pp: int, rank: int) -> list[tuple]:
    """Per cached layer on one rank: index, bytes per token, window, state and its buffers
    (the kind names may differ between the two specs; the costs may not)."""
    stack = family.model(model)
    indices = pp_layer_range(stack.layers.count, pp, rank)
    layers = stack_layers(
        stack,
        family.kv_cache_dtype,
        indices,
        tp_size=tp,
        max_seq_len=stack.max_seq_len,
        backoff=0,
        shape_of=stack,
    )
    return [
        (lay.index, lay.bytes_per_token, lay.window, lay.state_bytes, lay.mamba) for lay in layers
    ]


@pytest.mark.parametrize(("fixture", "family_name"), PAIRS)
def test_import_hf_reproduces_the_shipped_layers(fixture: str, family_name: str) -> None:
    shipped = load_family(FAMILIES / f"{family_name}.yaml")
    ours = imported(fixture, shipped)
    assert ours.kv_cache_dtype == shipped.kv_cache_dtype
    (model,) = ours.models
    assert model.name in [m.name for m in shipped.models]
    assert model.max_seq_len == shipped.model(model.name).max_seq_len
    for tp in (1, 2, 4):
        for pp, rank in ((1, 0), (2, 0), (2, 1), (3, 2)):
            assert layer_shapes(ours, model.name, tp, pp, rank) == layer_shapes(
                shipped, model.name, tp, pp, rank
            ), (tp, pp, rank)


@pytest.mark.parametrize(("fixture", "family_name"), PAIRS)
@pytest.mark.parametrize("semantics", ["trtllm-v2", "exact"])
def test_import_hf_reproduces_the_shipped_costs(
    fixture: str, family_name: str, semantics: str
) -> None:
    shipped = load_family(FAMILIES / f"{family_name}.yaml")
    ours = imported(fixture, shipped)
    (model,) = ours.models
    for batch, tokens, seq_len, tp in ((1, 1, 1, 1), (8, 8192, 4096, 2), (5, 100, 8191, 4)):
        params = RuntimeParams(
            max_batch_size=batch,
            max_num_tokens=tokens,
            max_seq_len=seq_len,
            tp_size=tp,
            semantics=semantics,
        )
        assert cache_costs(ours, model.name, "none", params) == cache_costs(
            shipped, model.name, "none", params
        )
