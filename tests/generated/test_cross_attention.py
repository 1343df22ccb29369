"""Cross-attention (encoder) caches (docs/cost-model.md §4): each request holds the K/V of its
encoder tokens in whole pages on every cross layer, from admission to its end, with no
per-token growth and no speculative headroom. Hand-derived costs of the shipped
llama3_2_vision family, the ``encoder_tokens`` runtime keyword, the shim's cross pool, the
refusals of TensorRT-LLM and vLLM, SGLang's one pool, and drift tests for the plausible
mistakes: the cross pool sized by the buggy static formula runs out of pages serving R
requests to S, sized by the correct one it does not.

Llama-3.2-11B-Vision (schema/families/llama3_2_vision.yaml, tpb 32, bf16): 32 self-attention
and 8 cross-attention layers, each 8 KV heads x 128 dims, so b = 2 x 8 x 128 x 2 = 4096 bytes
per token per layer. Encoder tokens e = 6404 = 4 tiles x 1601: ceil(6404 / 32) = 201 pages =
6432 tokens per cross layer.
"""

from __future__ import annotations

import pytest
from kvgen._engines._terms import policy_terms
from kvgen._engines.capacity import POLICY_TERMS, engine_capacity
from kvgen._spec.loader import load_family

from tests.generated.test_serving_quota import serve
from tests.reference import costmodel
from tests.workloads import (
    FIXTURE_SPECS,
    Harness,
    render_family,
    shim_errors,
)

MODEL = "llama3_2_11b_vision"
B_TOKEN = 2 * 8 * 128 * 2  # 4096 bytes per token per layer
SLOPE = 32 * B_TOKEN  # 131072: the self-attention layers grow with T
CROSS_ONE = 8 * 201 * 32 * B_TOKEN  # 210,763,776 bytes per request: 8 layers x 201 pages
PARAMS = {"max_batch_size": 8, "max_num_tokens": 8192, "max_seq_len": 8192}


@pytest.fixture(scope="module")
def vision(rendered_families):
    return rendered_families("llama3_2_vision")


def test_static_cost_by_hand(vision):
    terms = vision.sizing.cost_terms(MODEL, **PARAMS)["target"]
    assert terms["slope"] == SLOPE
    assert terms["per_request"] == CROSS_ONE
    assert terms["ctx_swa"] == 0
    assert terms["intercept"] == 8 * CROSS_ONE == 1_686_110_208
    # The speculative headroom does not touch the encoder cache: ngram K = 4 (H = 5) costs
    # the same.
    assert vision.sizing.cost_terms(MODEL, speculative="ngram4", **PARAMS) == {"target": terms}


def test_exact_adds_only_the_full_pools_rounding(vision):
    terms = vision.sizing.cost_terms(MODEL, semantics="exact", **PARAMS)["target"]
    assert terms["per_request"] == CROSS_ONE  # already whole pages
    assert terms["full_page_rounding"] == 8 * 31 * SLOPE  # B x (tpb - 1) x slope
    assert terms["intercept"] == 8 * CROSS_ONE + 8 * 31 * SLOPE


def test_encoder_tokens_keyword_replaces_the_spec_count(vision):
    # One tile: e = 1601 -> ceil(1601 / 32) = 51 pages = 1632 tokens per cross layer.
    one_tile = 8 * 1632 * B_TOKEN  # 53,477,376
    costs = vision.sizing.cache_costs(MODEL, encoder_tokens=1601, **PARAMS)
    assert costs == {"target": vision.sizing.CacheCost(SLOPE, 8 * one_tile)}
    # tp 8: one KV head per rank, b = 512; the pages stay 51 per layer.
    terms = vision.sizing.cost_terms(MODEL, encoder_tokens=1601, tp_size=8, **PARAMS)
    assert terms["target"]["per_request"] == 8 * 1632 * 512
    # pp 2 (20 layers a rank): rank 0 holds layers 0-19, cross at 3, 8, 13, 18.
    terms = vision.sizing.cost_terms(MODEL, pp_size=2, pp_rank=0, **PARAMS)
    assert terms["target"]["per_request"] == 4 * 201 * 32 * B_TOKEN
    assert terms["target"]["slope"] == 16 * B_TOKEN


def test_costmodel_agrees_with_the_generated_module(vision):
    family = load_family(FIXTURE_SPECS.parents[2] / "schema" / "families" / "llama3_2_vision.yaml")
    for extra in ({}, {"encoder_tokens": 1}, {"encoder_tokens": 6404}, {"tp_size": 4}):
        for semantics in ("trtllm-v2", "exact"):
            params = costmodel.RuntimeParams(semantics=semantics, **PARAMS, **extra)
            generic = costmodel.cache_costs(family, MODEL, "ngram4", params)["target"]
            kw = {"speculative": "ngram4", "semantics": semantics, **PARAMS, **extra}
            generated = vision.sizing.cache_costs(MODEL, **kw)["target"]
            assert (generic.slope, generic.intercept) == tuple(generated), extra


@pytest.mark.parametrize("value", [0, 6405, True, 2.0, "1601"])
def test_bad_encoder_tokens_name_the_argument(vision, value):
    with pytest.raises(ValueError, match="encoder_tokens"):
        vision.sizing.cache_costs(MODEL, encoder_tokens=value, **PARAMS)
    with pytest.raises(ValueError, match="encoder_tokens"):
        vision.allocator.KVCacheShim(
            MODEL, encoder_tokens=value, max_tokens=0, device="meta", **PARAMS
        )


def test_encoder_tokens_on_a_model_without_cross_layers_is_refused(rendered_families):
    llama3 = rendered_families("llama3")
    with pytest.raises(ValueError, match="only for models with cross-attention"):
        llama3.sizing.cache_costs("llama3_1_8b", encoder_tokens=16, **PARAMS)
    family = load_family(FIXTURE_SPECS.parents[2] / "schema" / "families" / "llama3.yaml")
    with pytest.raises(ValueError, match="encoder_tokens"):
        costmodel.cache_costs(
            family, "llama3_1_8b", "none", costmodel.RuntimeParams(**PARAMS, encoder_tokens=16)
        )


@pytest.mark.parametrize("engine", ["trtllm-v2", "vllm"])
def test_engines_refuse_rather_than_guess(vision, engine):
    # vLLM (0.34.0, plain "vllm"; 0.33.0 alike) cannot run Mllama at all (its registry:
    # supported until 0.10.2), so its
    # refusal says that rather than that cross-attention is not modelled.
    reason = r"vLLM 0\.34\.0 cannot run Mllama" if engine == "vllm" else "cross-attention"
    with pytest.raises(vision.sizing.NotModelled, match=reason):
        vision.sizing.engine_capacity(
            MODEL, 1 << 36, engine=engine, max_seq_len=8192, max_num_tokens=8192
        )


# SGLang 0.5.23 runs Mllama as an encoder-decoder model in its one token pool (read in
# sglang/srt: configs/model_config.py is_encoder_decoder_model and num_attention_layers = the
# text config's 40 hidden layers; pool_configurator.py's cell size for all 40 layers alike,
# cross ones included; models/mllama.py pad_input_ids: images x tiles x num_patches tokens
# before the text, each a pool slot, schedule_batch.py encoder_lens). Per token and tp rank:
# 40 layers x 2 (K, V) x 8 / tp heads x 128 dims x 2 B = 163,840 B at tp 1, 81,920 at tp 2.
# One image at max_num_tiles 4 of (560 / 14)^2 + 1 = 1601 patches: 6404 slots (the spec's
# encoder_tokens). Mllama is multimodal: kv_cache_configurator.py _profile_available_bytes takes
# mm_runtime_reservation_gb (SGLANG_VLM_CACHE_SIZE_MB 100 MiB = 104,857,600 B) off the budget
# first: 40 GiB leaves 42,844,815,360 B, 24 GiB 25,664,946,176 B.
@pytest.mark.parametrize(
    ("budget", "tp", "page", "tokens"),
    [
        (40 << 30, 1, 1, 261_504),  # 42,844,815,360 / 163,840 = 261,504 exactly
        (40 << 30, 2, 16, 523_008),  # / 81,920 = 523,008 = 32,688 pages of 16
        (24 << 30, 1, 1, 156_646),  # 25,664,946,176 / 163,840 = 156,646.4
        (24 << 30, 1, 16, 156_640),  # rounded down to 9,790 pages of 16
        (24 << 30, 2, 16, 313_280),  # / 81,920 = 313,292.8 -> 19,580 pages
    ],
)
def test_sglang_pools_mllama_cross_layers_and_image_tokens(vision, budget, tp, page, tokens):
    text = 8192
    per_token = 40 * 2 * (8 // tp) * 128 * 2
    got = vision.sizing.engine_capacity(
        MODEL, budget, engine="sglang", max_seq_len=text, max_num_tokens=8192, tp_size=tp,
        block_size=page,
    )  # fmt: skip
    assert got.kv_tokens == tokens and got.num_blocks == tokens // page
    # A request: 6404 image slots then 8192 text slots = 14,596 (2,391,408,640 B at tp 1).
    assert got.request_bytes == (6404 + text) * per_token
    assert got.max_concurrency == tokens / 14_596  # 40 GiB tp 1: 17.916
    family = load_family(FIXTURE_SPECS.parents[2] / "schema" / "families" / "llama3_2_vision.yaml")
    assert got == engine_capacity(
        family, MODEL, budget, engine="sglang", max_seq_len=text, max_num_tokens=8192,
        tp_size=tp, block_size=page,
    )  # fmt: skip


def test_compare_names_sglangs_encoder_slots(vision):
    # kvgen compare's term for the row above: 6404 slots of 163,840 B (40 x 2 x 8 x 128 x 2).
    family = load_family(FIXTURE_SPECS.parents[2] / "schema" / "families" / "llama3_2_vision.yaml")
    terms = policy_terms(family, MODEL, engine="sglang", max_seq_len=8192, max_num_tokens=8192)
    assert [t.name for t in terms] == ["encoder_tokens_in_pool"]
    assert terms[0].name in POLICY_TERMS
    assert "6,404 encoder tokens" in terms[0].detail and "163,840 B" in terms[0].detail
    assert "100 MiB" in terms[0].detail


def test_shim_takes_encoder_pages_at_admission_and_gives_them_back(vision):
    shim = vision.allocator.KVCacheShim(
        MODEL, encoder_tokens=1601, max_tokens=4096, device="meta", **PARAMS
    )
    pool = shim.managers["target"].pools["cross"]
    assert pool.pages == 8 * 51  # B x ceil(1601 / 32)
    assert pool.page_bytes == 32 * 8 * B_TOKEN  # one page of all 8 cross layers
    shim.add_request("a")
    assert pool.used == 51  # before any context token
    shim.context_chunk("a", 100)
    shim.generation_step(["a"])
    assert pool.used == 51  # no growth with history
    shim.suspend("a")  # a suspended request keeps its pages, evictable (TensorRT-LLM V2)
    assert pool.used == 51 and pool.live == 0 and pool.suspended == 51
    shim.resume("a")
    assert pool.used == pool.live == 51
    shim.free("a")
    assert pool.used == 0


def test_a_full_cross_pool_refuses_admission_and_changes_nothing(vision):
    shim = vision.allocator.KVCacheShim(
        MODEL,
        encoder_tokens=1601,
        max_tokens=4096,
        device="meta",
        pool_pages={("target", "cross"): 51 + 50},  # one request and a page short of two
        **PARAMS,
    )
    shim.add_request("a")
    with pytest.raises(vision.allocator.OutOfPagesError):
        shim.add_request("b")
    assert shim.requests == ("a",)
    assert shim.managers["target"].pools["cross"].used == 51


# --------------------------------------------------------------------------- drift

SPEC = FIXTURE_SPECS / "fx_cross.yaml"
TPB = 16
DRIFT = {"max_batch_size": 3, "max_num_tokens": 40, "max_seq_len": 140}


@pytest.fixture(scope="module")
def cross(tmp_path_factory):
    family = load_family(SPEC)
    return render_family(family, SPEC.read_bytes(), tmp_path_factory.mktemp("cross"), SPEC.name)


def _serve(rendered, model, profile, cross_pages_per_request=None):
    """R = 3 requests served together to S (prompts chunked by N, then steps with none and
    with every draft accepted, tests/generated/test_serving_quota.py), on the least quota
    for them; ``cross_pages_per_request`` rebuilds the cross pool at the page count a
    (buggy) static formula gives."""
    params = {**DRIFT, "semantics": "exact"}
    quota = rendered.sizing.quota_for_requests(
        model,
        requests=params["max_batch_size"],
        seq_len=params["max_seq_len"],
        speculative=profile,
        max_num_tokens=params["max_num_tokens"],
    )
    pages = None
    if cross_pages_per_request is not None:
        pages = {("target", "cross"): params["max_batch_size"] * cross_pages_per_request}
    shim = rendered.allocator.KVCacheShim(
        model, speculative=profile, quota_bytes=quota, device="meta", pool_pages=pages, **params
    )
    harness = Harness(shim, rendered.sizing, params)
    serve(harness, 0)
    serve(harness, shim.draft_slots)
    return shim


# (model, profile, e, b summed over the target's cross layers): vision has 2 cross layers of
# 2 heads x 16 dims bf16 (2 x 128 B); encdec 2 cross layers of 1 head x 32 dims fp8 (2 x 64 B).
DRIFT_CASES = [("vision", "ngram3", 37, 256), ("encdec", "eagle", 100, 128)]


@pytest.mark.parametrize(("model", "profile", "tokens", "b"), DRIFT_CASES)
def test_static_cross_term_is_the_pool_the_runtime_needs(cross, model, profile, tokens, b):
    """The correct static term, ceil(e/tpb) pages per request, is exactly the cross pool:
    served to S without running out (37 -> 3 pages, 100 -> 7 pages at tpb 16)."""
    terms = cross.sizing.cost_terms(model, speculative=profile, **DRIFT)["target"]
    cross_bytes = terms["per_request"] - _swa_per_request(cross, model, profile)
    assert cross_bytes == -(-tokens // TPB) * TPB * b
    shim = _serve(cross, model, profile, cross_bytes // (TPB * b))
    assert shim.managers["target"].pools["cross"].pages == 3 * -(-tokens // TPB)


def _swa_per_request(rendered, model, profile):
    """The SWA part of per_request (vision: 2 layers of w = 40 at H = 4, pages(40, 4) =
    ceil(42/16) + 1 = 4 pages of 2 x 128 B a token; encdec has none)."""
    if model != "vision":
        return 0
    return 4 * TPB * 256


@pytest.mark.parametrize(("model", "profile", "tokens", "b"), DRIFT_CASES)
def test_encoder_tokens_truncated_to_pages_runs_out(cross, model, profile, tokens, b):
    """floor(e/tpb) pages (2 for 37, 6 for 100): the last request's admission runs out.
    Charging e x b bytes with no page rounding gives the same pool here: floor(3e/tpb) =
    6 and 18 pages for B = 3, where the runtime needs 9 and 21."""
    errors = shim_errors(_serve(cross, model, profile))
    with pytest.raises(errors.OutOfPagesError):
        _serve(cross, model, profile, tokens // TPB)


def test_static_sized_for_a_smaller_encoder_than_the_runtime_runs_out(cross):
    """The sizing asked with encoder_tokens=17 (2 pages at tpb 16) while the engine runs the
    spec's 37 (3 pages): one page per request and cross layer short."""
    small = cross.sizing.cost_terms("vision", speculative="ngram3", encoder_tokens=17, **DRIFT)
    cross_bytes = small["target"]["per_request"] - _swa_per_request(cross, "vision", "ngram3")
    assert cross_bytes == 2 * TPB * 256
    errors = shim_errors(_serve(cross, "vision", "ngram3"))
    with pytest.raises(errors.OutOfPagesError):
        _serve(cross, "vision", "ngram3", cross_bytes // (TPB * 256))


def test_cross_layer_views_and_tensor_parallel_split(vision):
    # tp 8: ceil(8 / 8) = 1 KV head per rank; the view is (pages, tpb, heads, head_dim).
    shim = vision.allocator.KVCacheShim(
        MODEL, encoder_tokens=33, tp_size=8, max_tokens=64, device="meta", **PARAMS
    )
    views = shim.layer_views(3)  # layer 3 is the first cross-attention layer
    assert set(views) == {"k", "v"}
    assert tuple(views["k"].shape) == (8 * 2, 32, 1, 128)  # B x ceil(33 / 32) pages
    pool = shim.managers["target"].pools["cross"]
    assert pool.page_bytes == 8 * 32 * 2 * 1 * 128 * 2  # 8 layers x tpb x K,V x 1 head x bf16


def test_a_pipeline_rank_without_cross_layers_has_no_cross_pool(vision):
    # 40 layers over pp 20: rank 0 holds layers 0-1, both self-attention (cross at 3, 8, ...).
    shim = vision.allocator.KVCacheShim(
        MODEL, pp_size=20, pp_rank=0, max_tokens=64, device="meta", **PARAMS
    )
    assert "cross" not in shim.managers["target"].pools
    terms = vision.sizing.cost_terms(MODEL, pp_size=20, pp_rank=0, **PARAMS)["target"]
    assert terms["per_request"] == 0 and terms["slope"] == 2 * B_TOKEN
