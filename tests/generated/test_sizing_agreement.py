"""The generated sizing modules and the layer-by-layer reference agree on every shipped family.

kvgen has one static model, the interpreter (``kvgen.sizing.sizing_core``) each generated module
binds to its tables; it aggregates per layer kind. ``tests/reference/costmodel.py`` walks layers one
by one: a second opinion kept for the tests, next to the oracles (the hand derivations, the
runtime diff and the engine goldens). Both must give the same bytes for every model, profile
and runtime option.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from kvgen._spec.loader import load_family

from tests.reference import costmodel
from tests.sizing_support import import_generated

REPO = Path(__file__).resolve().parents[2]
FAMILIES = sorted(p.stem for p in (REPO / "schema" / "families").glob("*.yaml"))


def generic_terms(family, model, speculative, **kw):
    params = costmodel.RuntimeParams(**kw)
    out = {}
    for name, cost in costmodel.cache_costs(family, model, speculative, params).items():
        out[name] = (cost.slope, cost.per_request, cost.ctx_swa, cost.intercept)
    return out


@pytest.mark.parametrize("family_name", FAMILIES)
def test_generated_module_matches_generic_cost_model(family_name):
    path = REPO / "generated" / family_name / "sizing.py"
    if not path.exists():
        pytest.skip("run kvgen generate")
    sizing = import_generated(path, f"_kvgen_agree_{family_name}")
    family = load_family(REPO / "schema" / "families" / f"{family_name}.yaml")
    checked = 0
    for model in family.models:
        seq = min(model.max_seq_len, 8192)
        pp_sizes = (1, 2) if model.layers.count >= 2 else (1,)
        for profile in family.profiles_for(model.name):
            for semantics, scratch, reuse, tp, pp in itertools.product(
                costmodel.SEMANTICS, (False, True), (False, True), (1, 8), pp_sizes
            ):
                for rank in range(pp):
                    kw = {
                        "max_batch_size": 3,
                        "max_num_tokens": 500,
                        "max_seq_len": seq,
                        "tp_size": tp,
                        "pp_size": pp,
                        "pp_rank": rank,
                        "scratch_reuse": scratch,
                        "block_reuse": reuse,
                        "semantics": semantics,
                    }
                    got = sizing.cost_terms(model.name, speculative=profile, **kw)
                    want = generic_terms(family, model.name, profile, **kw)
                    assert {
                        m: (t["slope"], t["per_request"], t["ctx_swa"], t["intercept"])
                        for m, t in got.items()
                    } == want, (model.name, profile, kw)
                    checked += 1
    assert checked > 0
