"""The engine's terms beside the quota (docs/cost-model.md §9): ``cost_terms(...,
engine_terms=True)`` in the sizing interpreter and ``costmodel.engine_terms`` name them, derived
by hand here, and neither moves ``cache_costs`` nor any quota.

Numbers come from tests/fixtures/sizing_core_example.yaml (bound in memory to the interpreter,
``tests.sizing_support.example_module``), tpb = 16: ``hybrid`` = 6 layers of [local, ssm,
global, mlp]; local is sliding w=64 with 4 sinks, b = 2*2*8*2 = 64 (2 layers: 128 B per
token); global is full, b = 2*4*8*1 = 64 (the slope); ssm holds 1000 B of state per request
(2 layers); mlp no cache. ``latent`` = 3 MLA layers of (64+16)*2 + 8 = 168 B.
max_util_for_resume 0.95 is the float32 0.949999988079071.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from kvgen._spec.loader import load_family

from tests.reference import costmodel
from tests.sizing_support import example_module, import_generated

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "fixtures" / "sizing_core_example.yaml"
FAMILIES = sorted(p.stem for p in (REPO / "schema" / "families").glob("*.yaml"))
KW = {"max_batch_size": 4, "max_num_tokens": 64, "max_seq_len": 1024}
U32 = 0.949999988079071
ENGINE = set(costmodel.ENGINE_TERMS)
core = example_module()


def both(model: str, speculative: str = "none", **kw: object) -> dict[str, dict[str, int]]:
    """The engine terms of the interpreter, checked equal to the generic model's."""
    params = {**KW, **kw}
    got = core.cost_terms(model, speculative=speculative, engine_terms=True, **params)
    mine = {m: {k: v for k, v in t.items() if k in ENGINE} for m, t in got.items()}
    family = load_family(EXAMPLE)
    generic = costmodel.RuntimeParams(**params)  # type: ignore[arg-type]
    assert costmodel.engine_terms(family, model, speculative, generic) == mine
    return mine


def test_hybrid_without_speculation_by_hand():
    # per_request = pages(64, H=1) = ceil(63/16) + 1 + 1 sink page = 6 pages * 16 * 128
    # = 12288, + 2 * 1000 state = 14288. quota(S=1024) = 1024*64 + 4*14288 + 64*128 + 2000
    # (the reserved state row) = 65536 + 57152 + 8192 + 2000 = 132880.
    assert math.ceil(132880 / U32) == 139874
    assert both("hybrid") == {
        "target": {
            "startup_estimate_difference": 64 * 128,  # N * ctx_swa = 8192
            "watermark_quota": 139874 - 132880,  # 6994
            # One dummy at capacity 1 + H = 2: ceil(2/16) = 1 page of the full layer (64 B)
            # and of the local life cycle (128 B): 16 * 192.
            "cuda_graph_padding": 1 * 16 * (64 + 128),  # 3072
            "overlap_scheduler_requests": 4 * 14288,  # 57152
        }
    }


def test_hybrid_pard2_names_the_draft_pool_and_skips_its_resume_rounded_quota():
    # pard2: K=2, E=1, G=4, H=5. Target: pages(64, 5) = ceil(67/16) + 1 + 1 = 7;
    # per_request = 7*16*128 + 2000 = 16336; quota(1024) = 65536 + 4*16336 + 8192 + 2000
    # = 141072. Dummy: ceil((1 + 5)/16) = 1 page per life cycle.
    assert math.ceil(141072 / U32) == 148497
    # Draft: 2 sliding w=32 layers of 32 B (64 B per token), pages(32, 5) = 4 ->
    # per_request 4*16*64 = 4096; its single SWA pool is already resume-rounded (§4), so no
    # watermark term, and it has no context term in the startup estimate.
    assert both("hybrid", "pard2") == {
        "target": {
            "startup_estimate_difference": 8192,
            "watermark_quota": 148497 - 141072,  # 7425
            "cuda_graph_padding": 3072,
            "overlap_scheduler_requests": 4 * 16336,  # 65344
        },
        "draft": {"cuda_graph_padding": 1 * 16 * 64, "overlap_scheduler_requests": 4 * 4096},
    }


def test_exact_watermark_divides_the_whole_page_quota():
    # "exact" quota(1024), whole pages (§4): fixed 4*14288 + 2000 = 59152; the local context
    # pool (16*128 = 2048 B a page) holds ceil((min(1024, 64) + 4*15)/16) = 8 pages = 16384;
    # the full pool (16*64 = 1024 B a page) ceil((1024 + 4*15)/16) = 68 pages = 69632.
    quota = 59152 + 16384 + 69632
    assert core.quota_from_max_tokens("hybrid", 1024, semantics="exact", **KW) == {"target": quota}
    assert math.ceil(quota / U32) == 152809
    assert both("hybrid", semantics="exact")["target"]["watermark_quota"] == 152809 - quota


def test_latent_has_no_swa_context_and_no_per_request_bytes():
    # eagle1 (EAGLE3 one-model, K=1): E=0, G=2, H=2; slope = 3*168 + the draft layer 2*1*8*2 =
    # 536; quota(1024) = 548864; the dummy holds ceil(3/16) = 1 page: 16 * 536 = 8576.
    assert math.ceil(548864 / U32) == 577752
    assert both("latent", "eagle1") == {
        "target": {"watermark_quota": 577752 - 548864, "cuda_graph_padding": 8576}
    }


def test_engine_terms_move_no_cost_and_no_quota():
    for semantics in costmodel.SEMANTICS:
        kw = {**KW, "semantics": semantics}
        plain = core.cost_terms("hybrid", speculative="pard2", **kw)
        named = core.cost_terms("hybrid", speculative="pard2", engine_terms=True, **kw)
        assert {m: {k: named[m][k] for k in t} for m, t in plain.items()} == plain
        assert {k for t in named.values() for k in t} - {k for t in plain.values() for k in t} == (
            ENGINE
        )


@pytest.mark.parametrize("bad", [1, None, "yes"])
def test_engine_terms_must_be_a_bool(bad):
    with pytest.raises(ValueError, match="engine_terms must be True or False"):
        core.cost_terms("hybrid", engine_terms=bad, **KW)


@pytest.mark.parametrize("family_name", FAMILIES)
def test_generated_modules_agree_with_the_generic_engine_terms(family_name):
    path = REPO / "generated" / family_name / "sizing.py"
    if not path.exists():
        pytest.skip("run kvgen generate")
    sizing = import_generated(path, f"_kvgen_engine_terms_{family_name}")
    family = load_family(REPO / "schema" / "families" / f"{family_name}.yaml")
    for model in family.models:
        seq = min(model.max_seq_len, 8192)
        for profile, semantics, (tp, dp) in itertools.product(
            family.profiles_for(model.name),
            costmodel.SEMANTICS,
            ((1, False), (8, False), (8, True)),
        ):
            kw = {"max_batch_size": 3, "max_num_tokens": 500, "max_seq_len": seq}
            kw.update(tp_size=tp, attention_dp=dp)
            try:
                got = sizing.cost_terms(
                    model.name, speculative=profile, semantics=semantics, engine_terms=True, **kw
                )
            except ValueError as error:  # a state that tp cannot split (tested elsewhere)
                assert "does not divide" in str(error)
                continue
            mine = {m: {k: v for k, v in t.items() if k in ENGINE} for m, t in got.items()}
            params = costmodel.RuntimeParams(semantics=semantics, **kw)
            assert costmodel.engine_terms(family, model.name, profile, params) == mine


def test_nemotron_h_8b_ngram4_engine_terms_by_hand():
    path = REPO / "generated" / "nemotron_h" / "sizing.py"
    if not path.exists():
        pytest.skip("run kvgen generate")
    sizing = import_generated(path, "_kvgen_engine_terms_nemotron_by_hand")
    kw = {"max_batch_size": 8, "max_num_tokens": 512, "max_seq_len": 8192}
    terms = sizing.cost_terms("nemotron_h_8b", speculative="ngram4", engine_terms=True, **kw)
    target = terms["target"]
    # tpb 64; 4 attention layers of 8 KV heads x 128 bf16: slope 4*2*8*128*2 = 16384; 24 Mamba-2
    # layers of 2158592 B of state (test_recurrent_state.py derives it): per_request 51806208;
    # intercept (8 + 1 reserved + 8*5 intermediate) * 51806208 = 2538504192; no SWA layer.
    assert "startup_estimate_difference" not in target
    quota = 8192 * 16384 + 2538504192  # quota(S) = 2672721920
    assert sizing.quota_from_max_tokens("nemotron_h_8b", 8192, speculative="ngram4", **kw) == {
        "target": quota
    }
    assert target["watermark_quota"] == math.ceil(quota / U32) - quota
    # ngram K=4: H = K + 1 = 5; the dummy holds ceil((1 + 5)/64) = 1 page of the 4 attention
    # layers: 64 * 16384 = 1 MiB.
    assert target["cuda_graph_padding"] == 64 * 16384
    assert target["overlap_scheduler_requests"] == 8 * 51806208  # 414449664
