"""``kvgen import-hf`` on a shipped family's published config.json reproduces the shipped
spec's costs exactly: every cost term, both semantics, over a grid of batch, chunk, context,
tensor- and pipeline-parallel sizes (issue 13). The fixtures under tests/fixtures/hf/ are the
published configs' values; the shipped specs cite the same fields beside every number."""

from __future__ import annotations

import pytest
from kvgen import costmodel
from kvgen.importhf import import_config
from kvgen.loader import load_bytes, load_family

from tests.workloads import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "hf"
# (fixture, shipped family, model of that family)
PAIRS = [
    ("gemma-3n-E2B.json", "gemma3n", "gemma3n_e2b"),
    ("gemma-3n-E4B.json", "gemma3n", "gemma3n_e4b"),
]
GRID = [
    {"max_batch_size": b, "max_num_tokens": n, "max_seq_len": s, "tp_size": tp, "pp_size": pp}
    for b, n, s in ((1, 512, 4096), (8, 2048, 32768), (5, 1000, 7777))
    for tp, pp in ((1, 1), (2, 1), (4, 2))
]


def _costs(family, model: str, params: dict) -> list:
    out = []
    for semantics in ("trtllm-v2", "exact"):
        for rank in range(params["pp_size"]):
            runtime = costmodel.RuntimeParams(**params, pp_rank=rank, semantics=semantics)
            costs = costmodel.cache_costs(family, model, "none", runtime)
            out.append({name: (c.slope, c.intercept, c.exact_terms) for name, c in costs.items()})
    return out


@pytest.mark.parametrize(("fixture", "family_name", "model"), PAIRS)
def test_import_hf_reproduces_the_shipped_costs(fixture: str, family_name: str, model: str):
    shipped = load_family(ROOT / "schema" / "families" / f"{family_name}.yaml")
    path = FIXTURES / fixture
    result = import_config(
        str(path.relative_to(ROOT)),
        path.read_text(encoding="utf-8"),
        family=family_name,
        model=model,
        tokens_per_block=shipped.tokens_per_block,
    )
    assert result.diagnostics == [] and result.text is not None
    imported = load_bytes("imported.yaml", result.text.encode("utf-8")).family
    assert imported is not None
    assert imported.kv_cache_dtype == shipped.kv_cache_dtype
    assert imported.model(model).max_seq_len == shipped.model(model).max_seq_len
    assert imported.model(model).layers.count == shipped.model(model).layers.count
    for params in GRID:
        assert _costs(imported, model, params) == _costs(shipped, model, params), params
