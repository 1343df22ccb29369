"""``kvgen import-hf`` on a shipped family's published config.json (the fixture written out from
it) reproduces the shipped spec's costs exactly: every manager's slope and intercept and every
named term, in both semantics, over a grid of batch, chunk, context, tp and pp (no hand edits
between the import and the shipped spec, bar names, comments and speculative profiles)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from kvgen import costmodel
from kvgen.importhf import import_config
from kvgen.loader import load_bytes, load_family

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
FAMILIES = ROOT / "schema" / "families"

# (fixture, shipped family, model in the shipped family)
CASES = [
    ("llama-4-scout-17b-16e", "llama4_scout", "llama4_scout_17b_16e"),
    ("llama-4-maverick-17b-128e", "llama4_maverick", "llama4_maverick_17b_128e"),
]


def _imported(fixture: str):
    path = FIXTURES / f"{fixture}.json"
    result = import_config(path.name, path.read_text(encoding="utf-8"))
    assert [d.render() for d in result.diagnostics] == []
    assert result.text is not None
    loaded = load_bytes(f"{fixture}.yaml", result.text.encode())
    assert loaded.diagnostics == []
    assert loaded.family is not None
    return loaded.family


@pytest.mark.parametrize(("fixture", "family", "model"), CASES, ids=[c[1] for c in CASES])
def test_import_reproduces_the_shipped_costs(fixture, family, model):
    imported = _imported(fixture)
    shipped = load_family(FAMILIES / f"{family}.yaml")
    (imported_model,) = imported.models
    native = shipped.model(model).max_seq_len
    assert imported_model.max_seq_len == native
    assert imported.tokens_per_block == shipped.tokens_per_block
    grid = itertools.product(
        costmodel.SEMANTICS, (1, 8), (4096, 8192), (8192, 8193, 131072, native), (1, 2, 8)
    )
    for semantics, batch, chunk, seq_len, tp in grid:
        for pp_size, pp_rank in ((1, 0), (2, 0), (2, 1), (3, 2)):
            params = costmodel.RuntimeParams(
                batch, chunk, seq_len, tp_size=tp, pp_size=pp_size, pp_rank=pp_rank,
                semantics=semantics,
            )  # fmt: skip
            want = costmodel.cache_costs(shipped, model, "none", params)
            got = costmodel.cache_costs(imported, imported_model.name, "none", params)
            # ManagerCost compares every term: slope, per_request, ctx_swa, exact terms, pools.
            assert got == want, (semantics, batch, chunk, seq_len, tp, pp_size, pp_rank)
