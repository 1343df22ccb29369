"""Decode context parallelism (``dcp_size``, docs/cost-model.md §9) on the shipped DeepSeek-V3
(MLA: one latent copy per TP rank) and Llama 3.1 70B (GQA, 8 KV heads, replicated past tp 8).

With d = dcp_size the TP ranks that hold copies of the same KV heads hold every d-th token
instead: bytes per token of history on one rank are slope / d, and one full-attention page
(tpb tokens on each rank) spans tpb * d tokens of a request. Proven here: hand-derived
numbers, static == shim on every DCP rank in both semantics (quota both directions and the
adversarial workloads), the serving quota enough and least, the generic cost model agreeing,
and the engines' refusals in all three implementations.
"""

from __future__ import annotations

import pytest
from kvgen._spec.loader import load_family

from tests.reference import costmodel
from tests.workloads import (
    FIXTURE_SPECS,
    ROOT,
    Harness,
    aligned_batch_sweep,
    generate,
    prefill,
    render_family,
    run_adversarial,
    shim_errors,
    with_tokens_per_block,
)

# DeepSeek-V3: MLA latent (512 + 64) * 2 B (bf16) = 1152 B per layer, 61 layers = 70272 B per
# token on every TP rank (never split by tp, §1); tokens_per_block 64.
DSV3_SLOPE = 61 * 1152
# Llama 3.1 70B at tp 16: ceil(8 / 16) = 1 KV head per rank (replicated, §1), K and V of 128
# bf16 = 512 B per layer, 80 layers = 40960 B per token; tokens_per_block 32.
L70_SLOPE = 80 * 2 * 1 * 128 * 2

# (family, model, runtime parameters) of the diff grid: max_seq_len past two DCP pages.
CASES = [
    ("deepseek_v3", "deepseek_v3", {"tp_size": 8, "dcp_size": 8}),
    ("deepseek_v3", "deepseek_r1", {"tp_size": 4, "dcp_size": 2}),
    ("llama3", "llama3_1_70b", {"tp_size": 16, "dcp_size": 2}),
    ("llama3", "llama3_1_8b", {"tp_size": 32, "dcp_size": 4}),
]


def _params(rendered, extra):
    tpb = rendered.family.tokens_per_block
    span = tpb * extra["dcp_size"]
    return {"max_batch_size": 3, "max_num_tokens": tpb + 3, "max_seq_len": 2 * span + 5, **extra}


def _combos():
    out = []
    for family, model, extra in CASES:
        spec = load_family(ROOT / "schema" / "families" / f"{family}.yaml")
        for profile in spec.profiles_for(model):
            out.append((family, model, profile, extra))
    return out


COMBOS = _combos()
IDS = [f"{f}-{m}-{p}-tp{e['tp_size']}dcp{e['dcp_size']}" for f, m, p, e in COMBOS]


# --------------------------------------------------------------------------- hand numbers


def test_deepseek_v3_tp8_dcp8_holds_one_token_in_eight(rendered_families):
    sizing = rendered_families("deepseek_v3").sizing
    kw = {"max_batch_size": 4, "max_num_tokens": 2048, "max_seq_len": 32768, "tp_size": 8}
    assert sizing.cache_costs("deepseek_v3", **kw)["target"] == (DSV3_SLOPE, 0)  # 8 copies
    assert DSV3_SLOPE // 8 == 8784
    assert sizing.cache_costs("deepseek_v3", dcp_size=8, **kw)["target"] == (8784, 0)
    exact = sizing.cost_terms("deepseek_v3", dcp_size=8, semantics="exact", **kw)["target"]
    # A page spans 64 * 8 = 512 tokens: each of B = 4 requests rounds up to 511 tokens.
    assert exact["full_page_rounding"] == 4 * 511 * 8784  # 17954496
    assert exact["intercept"] == 4 * 511 * 8784
    # A budget of 8 GiB per rank: 8589934592 // 70272 = 122238 tokens replicated, and
    # 8589934592 // 8784 = 977906 tokens sharded (8x, +2 of the floor division).
    budget = {"target": 8 << 30}
    plain = sizing.max_tokens_from_quota("deepseek_v3", budget, **kw)["target"]
    sharded = sizing.max_tokens_from_quota("deepseek_v3", budget, dcp_size=8, **kw)["target"]
    assert plain == (8 << 30) // DSV3_SLOPE == 122238
    assert sharded == (8 << 30) // 8784 == 977906


def test_llama3_1_70b_tp16_dcp2_shards_the_replicated_head(rendered_families):
    sizing = rendered_families("llama3").sizing
    kw = {"max_batch_size": 8, "max_num_tokens": 2048, "max_seq_len": 8192, "tp_size": 16}
    assert sizing.cache_costs("llama3_1_70b", **kw)["target"].slope == L70_SLOPE == 40960
    assert sizing.cache_costs("llama3_1_70b", dcp_size=2, **kw)["target"].slope == 20480
    # 8 requests of 8192 tokens: peak capacity 8192 (H = 1), 128 pages of 32 * 2 = 64 tokens
    # each, 8 * 128 = 1024 pages of 32 tokens * 40960 B on each rank = 1342177280 B (1.25 GiB).
    quota = sizing.quota_for_requests(
        "llama3_1_70b", requests=8, seq_len=8192, max_num_tokens=2048, tp_size=16, dcp_size=2
    )
    assert quota == {"target": 1024 * 32 * 40960} == {"target": 1342177280}


def test_block_table_width_counts_pages_of_tpb_times_dcp(rendered_families):
    sizing = rendered_families("deepseek_v3").sizing
    # S = 163840, H = 1: ceil(163841 / 64) = 2561 -> 2564; ceil(163841 / 512) = 321 -> 324.
    assert sizing.max_blocks_per_seq("deepseek_v3", max_seq_len=163840) == 2564
    assert sizing.max_blocks_per_seq("deepseek_v3", max_seq_len=163840, dcp_size=8) == 324


# --------------------------------------------------------------------------- static == shim


def _token_grid(span: int, chunk: int) -> list[int]:
    return sorted({0, 1, span - 1, span, span + 1, chunk, 3 * span + 7, 40 * span})


@pytest.mark.parametrize(("family", "model", "profile", "extra"), COMBOS, ids=IDS)
def test_static_equals_shim_on_every_rank(rendered_families, family, model, profile, extra):
    rendered = rendered_families(family)
    sizing, spec = rendered.sizing, rendered.family
    params = _params(rendered, extra)
    span = spec.tokens_per_block * extra["dcp_size"]
    ranks = sorted({0, extra["dcp_size"] - 1})
    width = sizing.max_blocks_per_seq(
        model, speculative=profile, max_seq_len=params["max_seq_len"], dcp_size=extra["dcp_size"]
    )
    for semantics in ("exact", "trtllm-v2"):
        kw = dict(speculative=profile, semantics=semantics, **params)
        generic = costmodel.cache_costs(
            spec, model, profile, costmodel.RuntimeParams(semantics=semantics, **params)
        )
        for tokens in _token_grid(span, params["max_num_tokens"]):
            static = sizing.quota_from_max_tokens(model, tokens, **kw)
            assert static == {m: c.quota(tokens) for m, c in generic.items()}
            for rank in ranks:
                shim = rendered.allocator.KVCacheShim(
                    model, max_tokens=tokens, device="meta", dcp_rank=rank, **kw
                )
                built = shim.quota_bytes()
                if semantics == "exact" or tokens % span == 0:
                    assert built == static, (semantics, tokens, rank)
                else:  # trtllm-v2 has no pages: under one DCP page of slack (§4)
                    page = {m: span * c.slope for m, c in generic.items()}
                    assert all(0 <= built[m] - static[m] < page[m] for m in static)
                assert shim.max_blocks_per_seq == width
            if semantics != "exact":
                continue
            for delta in (-1, 0, 1):  # the inverse, at the quota and a byte either side
                quota = {m: q + delta for m, q in static.items()}
                if any(
                    q < sizing.quota_from_max_tokens(model, 0, **kw)[m] for m, q in quota.items()
                ):
                    continue
                held = rendered.allocator.KVCacheShim(
                    model, quota_bytes=quota, device="meta", **kw
                ).max_tokens()
                assert sizing.max_tokens_from_quota(model, quota, **kw) == held, (tokens, delta)
                assert {m: generic[m].max_tokens(q) for m, q in quota.items()} == held


_SMALL_PAGES: dict = {}


def _small_pages(family: str, tmp_path_factory):
    """``family`` at tokens_per_block 8: every alignment of a DCP page (8 * d tokens) is
    swept in seconds; the page rules do not depend on the page size (§3, §9)."""
    if family not in _SMALL_PAGES:
        spec = ROOT / "schema" / "families" / f"{family}.yaml"
        variant = with_tokens_per_block(load_family(spec), 8)
        out = tmp_path_factory.mktemp("dcp_t8")
        _SMALL_PAGES[family] = render_family(variant, spec.read_bytes(), out, spec.name)
    return _SMALL_PAGES[family]


@pytest.mark.parametrize(("family", "model", "profile", "extra"), COMBOS, ids=IDS)
def test_adversarial_workloads_stay_under_the_static_cost(
    tmp_path_factory, family, model, profile, extra
):
    rendered = _small_pages(family, tmp_path_factory)
    params = _params(rendered, extra)
    head = rendered.sizing.headroom(profile, overlap_slack=True)
    tokens = params["max_batch_size"] * (params["max_seq_len"] + head)
    for rank in sorted({0, extra["dcp_size"] - 1}):  # the busiest rank and the last
        shim = rendered.allocator.KVCacheShim(
            model,
            speculative=profile,
            max_tokens=tokens,
            semantics="exact",
            device="meta",
            reserve_pages=2 * params["max_batch_size"] + 2,
            dcp_rank=rank,
            **params,
        )
        harness = Harness(shim, rendered.sizing, params)
        run_adversarial(harness, thorough=False)  # DiffError where the static cost is short
        aligned_batch_sweep(harness)  # all B requests one token past a DCP page at once
        costs = rendered.sizing.cache_costs(model, speculative=profile, **params)
        for manager, stats in harness.stats.items():
            # Tight: the least exact slack is under one page (8 tokens on each of the d ranks,
            # 8 * d * slope bytes of this rank) per request.
            page = 8 * params["dcp_size"] * costs[manager].slope
            assert 0 <= stats.min_slack["exact"] < params["max_batch_size"] * page, manager


def test_every_rank_holds_the_same_pages_and_each_token_once(rendered_families):
    rendered = rendered_families("deepseek_v3")
    d, tpb = 8, 64
    kw = {"max_batch_size": 2, "max_num_tokens": 700, "max_seq_len": 4096, "tp_size": 8}
    shims = [
        rendered.allocator.KVCacheShim(
            "deepseek_v3",
            max_tokens=8192,
            device="meta",
            dcp_size=d,
            dcp_rank=rank,
            dcp_interleave=16,
            **kw,
        )
        for rank in range(d)
    ]
    for shim in shims:  # the same operations on every rank, as one scheduler drives them
        shim.add_request(1)
        shim.context_chunk(1, 700)
        shim.generation_step([1])  # history 701
        shim.begin_generation([1])  # capacity 701 + 1 = 702 at the step's peak
    # ceil(702 / 512) = 2 pages on every rank.
    tables = {tuple(shim.block_table(1, "full").tolist()) for shim in shims}
    assert len(tables) == 1 and sum(p >= 0 for p in next(iter(tables))) == 2
    assert {shim.bytes_in_use()["target"] for shim in shims} == {2 * tpb * DSV3_SLOPE}
    for position in range(702):
        holders = [r for r, shim in enumerate(shims) if shim.dcp_slot(1, position) is not None]
        assert holders == [(position // 16) % d]
    for shim in shims:
        slots = [shim.dcp_slot(1, p) for p in range(702)]
        mine = [s for s in slots if s is not None]
        assert len(mine) == len(set(mine))
        assert all(offset < tpb for _page, offset in mine)


# --------------------------------------------------------------------------- serving quota


@pytest.mark.parametrize(("family", "model", "profile", "extra"), COMBOS, ids=IDS)
def test_quota_for_requests_is_enough_and_least(rendered_families, family, model, profile, extra):
    rendered = rendered_families(family)
    params = {**_params(rendered, extra), "semantics": "exact"}
    requests, seq_len = params["max_batch_size"], params["max_seq_len"]
    quota = rendered.sizing.quota_for_requests(
        model,
        requests=requests,
        seq_len=seq_len,
        speculative=profile,
        max_num_tokens=params["max_num_tokens"],
        tp_size=extra["tp_size"],
        dcp_size=extra["dcp_size"],
    )
    generic = costmodel.quota_for_requests(
        rendered.family, model, profile, costmodel.RuntimeParams(**params)
    )
    assert quota == generic

    def serve(quota_bytes):
        shim = rendered.allocator.KVCacheShim(
            model, speculative=profile, quota_bytes=quota_bytes, device="meta", **params
        )
        h = Harness(shim, rendered.sizing, params)
        rids = list(range(requests))
        for rid in rids:
            h.add(rid)
        prefill(h, dict.fromkeys(rids, seq_len - 1))
        generate(h, rids, seq_len, lambda rid, step: 0)
        return shim

    shim = serve(quota)
    span = rendered.family.tokens_per_block * extra["dcp_size"]
    head = rendered.sizing.headroom(profile)
    for manager, bytes_ in quota.items():  # target, and a separate draft pool (§6)
        # Every request peaks at capacity S - 1 + H at once: R * ceil((S - 1 + H) / span)
        # pages; one byte less plans one page less and the requests run out.
        pages = requests * -(-(seq_len - 1 + head) // span)
        assert shim.managers[manager].pools["full"].pages == pages
        with pytest.raises(shim_errors(shim).OutOfPagesError):
            serve({**quota, manager: bytes_ - 1})


# --------------------------------------------------------------------------- refusals

REFUSALS = [
    # gemma3_4b: 4 KV heads, tp 8 leaves 2 copies, but its sliding layers are not sharded.
    ("gemma3", "gemma3_4b", {"tp_size": 8, "dcp_size": 2}, "sliding attention"),
    ("llama3", "llama3_1_70b", {"tp_size": 16, "dcp_size": 3}, "must be divisible by dcp_size"),
    # tp 8 over 8 KV heads: no copies to shard; tp 16: 2 copies, not 4.
    ("llama3", "llama3_1_70b", {"tp_size": 8, "dcp_size": 2}, "tp_size // kv_heads = 1"),
    ("llama3", "llama3_1_70b", {"tp_size": 16, "dcp_size": 4}, "tp_size // kv_heads = 2"),
    ("deepseek_v3", "deepseek_v3", {"tp_size": 8, "dcp_size": 8, "attention_dp": True}, "attn"),
    ("deepseek_v3", "deepseek_v3", {"tp_size": 8, "dcp_size": 0}, "positive int"),
]


@pytest.mark.parametrize(("family", "model", "extra", "words"), REFUSALS)
def test_the_engines_refusals_in_all_three_implementations(
    rendered_families, family, model, extra, words
):
    rendered = rendered_families(family)
    kw = {"max_batch_size": 2, "max_num_tokens": 64, "max_seq_len": 1024, **extra}
    words = "attention_dp=True" if words == "attn" else words
    messages = []
    for call in (
        lambda: rendered.sizing.cache_costs(model, **kw),
        lambda: rendered.sizing.quota_from_max_tokens(model, 0, semantics="exact", **kw),
        lambda: rendered.sizing.cost_terms(model, engine_terms=True, **kw),
        lambda: rendered.sizing.split_budget(model, 1 << 30, **kw),
        lambda: costmodel.cache_costs(
            rendered.family, model, "none", costmodel.RuntimeParams(**kw)
        ),
        lambda: rendered.allocator.KVCacheShim(model, max_tokens=0, device="meta", **kw),
    ):
        with pytest.raises(ValueError, match="dcp_size") as caught:
            call()
        messages.append(str(caught.value))
    assert words in messages[0]
    assert len(set(messages)) == 1, messages  # one wording everywhere


def test_the_shim_checks_its_rank_and_interleave(rendered_families):
    allocator = rendered_families("deepseek_v3").allocator
    kw = {"max_batch_size": 1, "max_num_tokens": 64, "max_seq_len": 1024, "max_tokens": 0}
    kw |= {"tp_size": 8, "dcp_size": 8, "device": "meta"}
    with pytest.raises(ValueError, match=r"dcp_rank must be in \[0, 8\), got 8"):
        allocator.KVCacheShim("deepseek_v3", dcp_rank=8, **kw)
    with pytest.raises(ValueError, match="dcp_interleave 3 must divide tokens_per_block 64"):
        allocator.KVCacheShim("deepseek_v3", dcp_interleave=3, **kw)


def test_a_slope_that_does_not_divide_is_refused_statically(tmp_path):
    # The example fixture's latent model: 3 layers of 160 + 8 = 168 B = 504 B per token,
    # 504 % 5 = 4: one rank would hold 100.8 B per token of history.
    spec = FIXTURE_SPECS.parent / "sizing_core_example.yaml"
    rendered = render_family(load_family(spec), spec.read_bytes(), tmp_path, spec.name)
    kw = {"max_batch_size": 1, "max_num_tokens": 16, "max_seq_len": 256, "tp_size": 5}
    with pytest.raises(ValueError, match=r"504 bytes per token .* do not divide by dcp_size 5"):
        rendered.sizing.cache_costs("latent", dcp_size=5, **kw)
    with pytest.raises(ValueError, match=r"504 bytes per token .* do not divide by dcp_size 5"):
        costmodel.cache_costs(
            rendered.family, "latent", "none", costmodel.RuntimeParams(dcp_size=5, **kw)
        )
    assert rendered.sizing.cache_costs("latent", dcp_size=1, **kw)["target"].slope == 504


@pytest.mark.parametrize(("family", "model", "profile", "extra"), COMBOS, ids=IDS)
def test_named_terms_agree_with_the_generic_model(rendered_families, family, model, profile, extra):
    rendered = rendered_families(family)
    params = _params(rendered, extra)
    span = rendered.family.tokens_per_block * extra["dcp_size"]
    terms = rendered.sizing.cost_terms(
        model, speculative=profile, semantics="exact", engine_terms=True, **params
    )
    runtime = costmodel.RuntimeParams(semantics="exact", **params)
    generic = costmodel.cache_costs(rendered.family, model, profile, runtime)
    engine = costmodel.engine_terms(rendered.family, model, profile, runtime)
    head = rendered.sizing.headroom(profile)
    for manager, named in terms.items():
        cost = generic[manager]
        assert named["slope"] == cost.slope and named["intercept"] == cost.intercept
        assert named["full_page_rounding"] == params["max_batch_size"] * (span - 1) * cost.slope
        assert named["pool_page_rounding"] == cost.pool_page_rounding == (span - 1) * cost.slope
        # The padding dummy at capacity 1 + H: ceil((1 + H) / span) pages of span * slope B.
        padding = -(-(1 + head) // span) * span * cost.slope
        assert named["cuda_graph_padding"] == engine[manager]["cuda_graph_padding"] == padding
        assert named["watermark_quota"] == engine[manager]["watermark_quota"]


def test_dcp_size_goes_through_the_one_keyword_validation(rendered_families):
    import numpy as np

    sizing = rendered_families("deepseek_v3").sizing
    kw = {"max_batch_size": 2, "max_num_tokens": 64, "max_seq_len": 1024, "tp_size": 8}
    for bad in (True, 2.0, "2", -1, None):
        with pytest.raises(ValueError, match=f"dcp_size must be a positive int, got {bad!r}"):
            sizing.cache_costs("deepseek_v3", dcp_size=bad, **kw)
        with pytest.raises(ValueError, match="dcp_size must be a positive int"):
            sizing.max_blocks_per_seq("deepseek_v3", max_seq_len=1024, dcp_size=bad)
    with pytest.raises(ValueError, match="dcp_size must be a positive int"):
        sizing.quota_for_requests(
            "deepseek_v3", requests=1, seq_len=8, max_num_tokens=8, tp_size=8, dcp_size=[2]
        )
    # numpy integers are integers (as for every other keyword); the answer is the int's.
    assert sizing.cache_costs("deepseek_v3", dcp_size=np.int64(2), **kw) == sizing.cache_costs(
        "deepseek_v3", dcp_size=2, **kw
    )
    assert sizing.cache_costs("deepseek_v3", dcp_size=1, **kw) == sizing.cache_costs(
        "deepseek_v3", **kw
    )
