"""Chunked local attention (docs/cost-model.md §3, §4): the shipped Llama 4 numbers derived by
hand, the engines' refusal, window resolution, and drift regressions for the plausible ways a
static estimate of a chunked layer goes wrong (each one fails the diff against the shim)."""

from __future__ import annotations

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._spec.loader import load_family

from tests.reference import costmodel
from tests.reference import layers as shapes
from tests.workloads import (
    FIXTURE_SPECS,
    ROOT,
    DiffError,
    Harness,
    aligned_batch_sweep,
    render_family,
)

SCOUT = "llama4_scout_17b_16e"
# Llama 4 (Scout and Maverick alike): b_l = 2 (K, V) x 8 KV heads x 128 head_dim x 2 bytes
# = 4,096 B per token per layer; 48 layers, every 4th full (NoPE): 12 full, 36 chunked.
B_L = 2 * 8 * 128 * 2
FULL_SLOPE = 12 * B_L  # 49,152 B per token of history
CHUNKED = 36 * B_L  # 147,456 B per token of the chunked life cycle


@pytest.fixture(scope="module")
def scout(rendered_families):
    return rendered_families("llama4_scout").sizing


def test_scout_trtllm_v2_terms_by_hand(scout):
    # pages(8192, H=1) at tpb 32: ceil((8192 + 1 - 1 + 32 - gcd(8192, 32))/32) = 8192/32 = 256.
    # per_request = 256 pages x 32 tokens x 147,456 B = 1,207,959,552 B (1.125 GiB).
    # intercept = B x per_request + N x ctx = 8 x 1,207,959,552 + 8192 x 147,456
    #           = 9,663,676,416 + 1,207,959,552 = 10,871,635,968.
    terms = scout.cost_terms(SCOUT, max_batch_size=8, max_num_tokens=8192, max_seq_len=131072)
    assert terms == {
        "target": {
            "slope": FULL_SLOPE,
            "per_request": 256 * 32 * CHUNKED,
            "ctx_swa": CHUNKED,
            "intercept": 10_871_635_968,
        }
    }
    assert scout.pages_per_request(SCOUT, max_seq_len=131072) == {"target": {"c8192": 256}}


def test_scout_exact_terms_by_hand(scout):
    # full_page_rounding = B x (tpb-1) x slope = 8 x 31 x 49,152 = 12,189,696.
    # H = 1, E = 0: pages(8192, 1) = pages(8192, 0) = 256 (no spare page), so
    # context_page_rounding = min(B, N) x (tpb-1) x ctx = 8 x 31 x 147,456 = 36,569,088.
    terms = scout.cost_terms(
        SCOUT, max_batch_size=8, max_num_tokens=8192, max_seq_len=131072, semantics="exact"
    )["target"]
    assert terms["full_page_rounding"] == 12_189_696
    assert terms["context_page_rounding"] == 36_569_088
    assert terms["intercept"] == 10_871_635_968 + 12_189_696 + 36_569_088


def test_scout_ngram_headroom_adds_one_page(scout):
    # ngram K=4: H = K + 1 = 5: ceil((8192 + 5 - 1)/32) = 257 pages (one page more than H = 1).
    pages = scout.pages_per_request(SCOUT, speculative="ngram", max_seq_len=131072)
    assert pages == {"target": {"c8192": 257}}


def test_chunk_reaching_max_seq_len_is_full_attention(scout):
    # S = 8192: no history reaches the first chunk's end, so no page goes stale (§1): the
    # chunked layers join the slope, 48 x 4,096 = 196,608 B per token, nothing per request.
    terms = scout.cost_terms(SCOUT, max_batch_size=8, max_num_tokens=8192, max_seq_len=8192)
    assert terms["target"]["slope"] == 48 * B_L
    assert terms["target"]["per_request"] == 0
    # One token more and the chunk is below S again.
    terms = scout.cost_terms(SCOUT, max_batch_size=8, max_num_tokens=8192, max_seq_len=8193)
    assert terms["target"]["slope"] == FULL_SLOPE


def test_maverick_matches_scout_but_for_its_context(rendered_families, scout):
    maverick = rendered_families("llama4_maverick").sizing
    kw = dict(max_batch_size=4, max_num_tokens=4096, max_seq_len=1048576)
    assert maverick.cost_terms("llama4_maverick_17b_128e", **kw) == scout.cost_terms(SCOUT, **kw)
    with pytest.raises(ValueError, match="max_seq_len must be <= 1048576"):
        maverick.cost_terms("llama4_maverick_17b_128e", **{**kw, "max_seq_len": 1048577})


def test_costmodel_agrees_with_the_generated_module(scout):
    family = load_family(ROOT / "schema" / "families" / "llama4_scout.yaml")
    for semantics in costmodel.SEMANTICS:
        for tp in (1, 8):
            params = costmodel.RuntimeParams(8, 8192, 131072, tp_size=tp, semantics=semantics)
            generic = costmodel.cache_costs(family, SCOUT, "ngram", params)["target"]
            static = scout.cache_costs(
                SCOUT,
                speculative="ngram",
                max_batch_size=8,
                max_num_tokens=8192,
                max_seq_len=131072,
                tp_size=tp,
                semantics=semantics,
            )["target"]
            assert (static.slope, static.intercept) == (generic.slope, generic.intercept)


@pytest.mark.parametrize(
    ("engine", "tokens"),
    [
        # vLLM (ChunkedLocalAttentionSpec): 36 chunked + 12 full layers -> 4 groups of 12; a
        # block 12 x 16 x 8 x 128 x 2 x 2 B = 786,432 B, 80 GiB // that = 109,226 blocks. A
        # request at 131,072: 8,192 full blocks + 3 chunked groups x ceil(min(8,192 + 2 x 8,192,
        # 131,072) / 16) = 1,536 -> 12,800 blocks; 109,226 / 12,800 x 131,072 = 1,118,474.
        ("vllm==0.33.0", 1_118_474),  # its default block 16
        # SGLang (Llama4ForConditionalGeneration is hybrid SWA): chunked layers are the sliding
        # pool at 0.8 of the full pool's tokens: 80 GiB / (12 + 0.8 x 36) x 4,096 B = 514,007.
        ("sglang", 514_007),
    ],
)
def test_engines_answer_for_chunked_attention(scout, engine, tokens):
    kw = dict(engine=engine, max_seq_len=131072, max_num_tokens=8192)
    assert scout.engine_capacity(SCOUT, 80 << 30, **kw).kv_tokens == tokens
    family = load_family(ROOT / "schema" / "families" / "llama4_scout.yaml")
    assert engine_capacity(family, SCOUT, 80 << 30, **kw).kv_tokens == tokens


def test_block_reuse_never_extends_a_chunk(rendered_families):
    # MTP (D = K = 2) extends sliding windows under block reuse (§5); the chunk start does not
    # move with a re-matched block, so c128 keeps pages(128, H = 2K = 4) = ceil(131/32) = 5.
    fx = rendered_families("fx_chunked_t32")
    for reuse in (False, True):
        pages = fx.sizing.pages_per_request(
            "four", speculative="mtp", max_seq_len=4096, block_reuse=reuse
        )
        assert pages == {"target": {"c128": 5}}
        shim = fx.allocator.KVCacheShim(
            "four",
            speculative="mtp",
            max_batch_size=1,
            max_num_tokens=64,
            max_seq_len=4096,
            max_tokens=0,
            block_reuse=reuse,
            device="meta",
        )
        # B x 5 pages; T = 0 plans no context page (min(T, N) = 0 tokens in context).
        assert shim.pool("c128").pages == 5


def test_chunked_and_sliding_of_one_size_are_two_life_cycles(rendered_families):
    # "odd": chunk 100 and window 100 at tpb 32. Chunked: ceil((100 + 1 - 1 + 32 - 4)/32) = 4;
    # sliding: ceil((100 + 1 - 2)/32) + 1 = 5.
    fx = rendered_families("fx_chunked_t32")
    pages = fx.sizing.pages_per_request("odd", max_seq_len=4096)
    assert pages == {"target": {"c100": 4, "w100": 5}}


def test_scratch_reuse_leaves_chunked_layers_alone(rendered_families):
    # Scratch reuse shares context pages between SWA layers of one (w, b_l); a chunk boundary
    # frees a whole chunk at once, so chunked layers keep charging every layer: 6 layers x
    # 2 x 2 x 16 x 2 B = 768 B per context token with and without scratch reuse.
    fx = rendered_families("fx_chunked_t32")
    kw = dict(max_batch_size=2, max_num_tokens=64, max_seq_len=4096)
    for reuse in (False, True):
        terms = fx.sizing.cost_terms("four", scratch_reuse=reuse, **kw)
        assert terms["target"]["ctx_swa"] == 768
        shim = fx.allocator.KVCacheShim(
            "four", max_tokens=0, scratch_reuse=reuse, device="meta", **kw
        )
        assert "c128/scratch" not in shim.managers["target"].pools


# --------------------------------------------------------------------------- drift


@pytest.fixture(scope="module")
def drift_family(tmp_path_factory):
    spec = FIXTURE_SPECS / "fx_chunked.yaml"
    family = load_family(spec)
    return render_family(family, spec.read_bytes(), tmp_path_factory.mktemp("chunk"), spec.name)


def _harness(rendered, model, profile, params, short_pages=0):
    """A shim diffed against the static cost; ``short_pages`` pages per request taken off the
    chunked life cycle in both semantics (the bug under test)."""
    shim = rendered.allocator.KVCacheShim(
        model,
        speculative=profile,
        max_tokens=params["max_batch_size"] * (params["max_seq_len"] + 64),
        device="meta",
        semantics="exact",
        reserve_pages=4 * params["max_batch_size"],
        **params,
    )
    h = Harness(shim, rendered.sizing, params)
    if short_pages:
        page = shim.tokens_per_block * next(
            c.token_bytes for c in shim.managers["target"].cycles if c.chunk
        )
        short = params["max_batch_size"] * short_pages * page
        for semantics in ("exact", "trtllm-v2"):
            t = h.terms[semantics]["target"]
            h.cost_override[semantics] = lambda m, tokens, t=t: (
                t["slope"] * tokens + t["intercept"] - short
            )
    return h


def _both_ways(make, workload):
    workload(make(0))
    with pytest.raises(DiffError):
        workload(make(1))


def test_drift_ceil_chunk_over_block_under_speculation(drift_family):
    # PARD K=2: H = 3K - 1 = 5, E = K - 1 = 1. pages(128, 5) = ceil((128 + 4)/32) = 5 but
    # ceil(C/tpb) = 4: one page short per request once the draft tokens spill past the chunk's
    # last page. pages(128, E) = 4 < 5 leaves a spare page, so "exact" adds no context
    # rounding, and N = 16 keeps the context term (16 x 768 B) below one page per request.
    params = {"max_batch_size": 4, "max_num_tokens": 16, "max_seq_len": 300}
    assert shapes.pages_per_chunk(128, 5, 32) == 5
    _both_ways(
        lambda short: _harness(drift_family, "four", "pard", params, short),
        aligned_batch_sweep,
    )


def test_drift_aligned_formula_on_a_misaligned_chunk(drift_family):
    # chunk 100 at tpb 32 (g = gcd(100, 32) = 4), EAGLE3 K=3 (H = 6): the chunk starting at
    # q*100 with q*100 mod 32 = 28 (q = 7) begins 28 tokens into a page it keeps, so the peak
    # is ceil((100 + 6 - 1 + 32 - 4)/32) = ceil(133/32) = 5 pages; the formula for aligned
    # chunks, ceil((C + H - 1)/tpb) = ceil(105/32) = 4, is one page short there. One request
    # walks 900 tokens (chunks q = 0..8) and the c100 pool's pages in use are read at every
    # step's peak.
    shim = drift_family.allocator.KVCacheShim(
        "odd",
        speculative="eagle",
        max_batch_size=1,
        max_num_tokens=64,
        max_seq_len=900,
        max_tokens=1000,
        device="meta",
    )
    shim.add_request(0)
    shim.context_chunk(0, 1)
    peaks: dict[int, int] = {}
    while shim.request_state(0)[0] < 899 - 6:
        history = shim.request_state(0)[0]
        shim.begin_generation([0])
        peaks[history // 100] = max(peaks.get(history // 100, 0), shim.pool("c100").used)
        shim.end_generation([0], 0)
    assert max(peaks.values()) == shapes.pages_per_chunk(100, 6, 32) == 5
    assert peaks[7] == 5  # the chunk whose start sits 28 tokens into a page
    assert peaks[0] == 4  # an aligned chunk start: the aligned formula holds there
    assert -(-(100 + 6 - 1) // 32) == 4
