"""Drift regressions (docs/cost-model.md §7): each known way a static estimate drifts from the
runtime makes the diff fail when the static side carries the bug, and pass when it does not."""

from __future__ import annotations

import pytest
from kvgen._spec.loader import load_family

from tests.workloads import (
    FIXTURE_SPECS,
    DiffError,
    Harness,
    aligned_batch_sweep,
    alignment_sweep,
    max_chunk_beside_generation,
    render_family,
)

SPEC = FIXTURE_SPECS / "drift" / "fx_drift.yaml"
TPB = 16


@pytest.fixture(scope="module")
def family():
    return load_family(SPEC)


@pytest.fixture(scope="module")
def render(tmp_path_factory, family):
    out = tmp_path_factory.mktemp("drift")
    cache = {}

    def get(name="fx_drift", variant=None):
        if name not in cache:
            spec = family if variant is None else variant
            cache[name] = render_family(
                spec.model_copy(update={"family": name}), SPEC.read_bytes(), out, SPEC.name
            )
        return cache[name]

    return get


def harness(rendered, model, profile, params, buggy=None, **shim):
    """A workload-sized shim; ``buggy(manager, T)`` replaces the exact static cost."""
    tokens = params["max_batch_size"] * (params["max_seq_len"] + 64)
    built = rendered.allocator.KVCacheShim(
        model,
        speculative=profile,
        max_tokens=tokens,
        device="meta",
        semantics="exact",
        reserve_pages=4 * params["max_batch_size"],
        **params,
        **shim,
    )
    h = Harness(built, rendered.sizing, params)
    if buggy is not None:
        h.cost_override["exact"] = buggy
    return h


def v2_cost(h, manager, tokens):
    t = h.terms["trtllm-v2"][manager]
    return t["slope"] * tokens + t["intercept"]


def sweep(h):
    aligned_batch_sweep(h)
    alignment_sweep(h, lambda rid, step: h.shim.draft_slots, rid_base=100_000)


def both_ways(make, workload):
    """The correct static cost passes the workload; the buggy one fails it."""
    workload(make(None))
    with pytest.raises(DiffError):
        workload(make(True))


# PARD (H = 11, E = 3) at w = 58: pages(w, H) > pages(w, E), so the exact semantics adds no
# context rounding; a small chunk budget keeps N * ctx_swa below one page per request.
PARAMS = {"max_batch_size": 4, "max_num_tokens": 16, "max_seq_len": 300}


def test_1_boundary_page_missing(render):
    rendered = render()

    def make(bug):
        h = harness(rendered, "swa", "pard4", PARAMS)
        if bug:
            # ceil(w/tpb) pages per request instead of ceil((w+H-2)/tpb)+1, per SWA cycle.
            short = sum(
                (
                    rendered.allocator.peak_live_pages(c.window, h.shim.headroom, 0, TPB)
                    - -(-c.window // TPB)
                )
                * TPB
                * c.token_bytes
                for c in h.shim.managers["target"].cycles
                if c.kind == "swa"
            )
            h.cost_override["trtllm-v2"] = lambda m, t: (
                v2_cost(h, m, t) - (4 * short if m == "target" else 0)
            )
        return h

    both_ways(make, sweep)


def test_2_context_swa_term_missing(render):
    rendered = render()

    def make(bug):
        params = {**PARAMS, "max_num_tokens": 256}
        h = harness(rendered, "swa", "pard4", params)
        if bug:
            ctx = h.terms["trtllm-v2"]["target"]["ctx_swa"] * params["max_num_tokens"]
            h.cost_override["trtllm-v2"] = lambda m, t: (
                v2_cost(h, m, t) - (ctx if m == "target" else 0)
            )
        return h

    both_ways(make, max_chunk_beside_generation)


def test_3_pard_sized_with_k_instead_of_2k_minus_1(render, family):
    profile = family.speculative[0]
    as_k = family.model_copy(
        update={"speculative": [profile.model_copy(update={"mode": "dflash"})]}
    )
    buggy_sizing = render("fx_drift_pard_k", as_k).sizing
    params = {"max_batch_size": 8, "max_num_tokens": 16, "max_seq_len": 300}
    rendered = render()
    assert buggy_sizing.headroom("pard4") == 8 and rendered.sizing.headroom("pard4") == 11

    def make(bug):
        h = harness(rendered, "swa", "pard4", params)
        if bug:
            terms = buggy_sizing.cost_terms(
                "swa", speculative="pard4", semantics="trtllm-v2", **params
            )
            h.cost_override["trtllm-v2"] = lambda m, t: (
                terms[m]["slope"] * t + terms[m]["intercept"]
            )
        return h

    both_ways(make, aligned_batch_sweep)


def test_4_resume_watermark(render):
    """A draft pool that fits B requests at their peak still refuses a resume above u unless
    it carries the resume rounding (pages = ceil(pages / float32(u)))."""
    rendered = render()
    params = {"max_batch_size": 8, "max_num_tokens": 16, "max_seq_len": 300}
    terms = rendered.sizing.cost_terms("swa", speculative="pard4", **params)["draft"]
    slot = TPB * 2 * 2 * 16 * 2  # one page of the bf16 draft layer
    unrounded = (terms["intercept"] - terms["resume_rounding"]) // slot
    allocator = rendered.allocator
    # Histories at which a request holds its peak draft pages during a step.
    head, extra = 11, 3
    peak_at = [
        h
        for h in range(60, 200)
        if allocator.live_pages(h, h + head, 58, 0, TPB)
        == allocator.peak_live_pages(58, head, 0, TPB)
    ]

    def scenario(pool_pages):
        shim = allocator.KVCacheShim(
            "swa",
            speculative="pard4",
            max_tokens=8 * 400,
            device="meta",
            pool_pages={("target", "w58"): 1000, **(pool_pages or {})},
            **params,
        )
        for rid in range(8):
            shim.add_request(rid)
            left = peak_at[rid % len(peak_at)]
            while left:
                shim.context_chunk(rid, min(16, left))
                left -= min(16, left)
        shim.suspend(7)
        shim.begin_generation(range(7))
        shim.resume(7)
        return shim

    assert scenario(None).request_state(7)[1] - scenario(None).request_state(7)[0] == extra
    with pytest.raises(allocator.ResumeRefusedError) as info:
        scenario({("draft", "w58"): unrounded})
    assert info.value.manager == "draft" and info.value.utilisation > 0.95


def test_5_scratch_flag_read_two_ways(render):
    rendered = render()
    params = {**PARAMS, "max_num_tokens": 256}

    def make(bug):
        h = harness(rendered, "swa", "pard4", params)  # the runtime: no scratch reuse
        if bug:  # the static side read the flag as on
            terms = rendered.sizing.cost_terms(
                "swa", speculative="pard4", semantics="trtllm-v2", scratch_reuse=True, **params
            )
            h.cost_override["trtllm-v2"] = lambda m, t: (
                terms[m]["slope"] * t + terms[m]["intercept"]
            )
        return h

    both_ways(make, max_chunk_beside_generation)


def test_6_window_override_on_a_full_layer(render, family):
    """Counting a natively full layer with a bounding window as SWA moves it into the fixed
    cost: the static quota no longer equals the bytes of the pools the runtime builds."""
    model = family.models[0]
    kinds = dict(model.layer_kinds)
    kinds["g"] = kinds["s"].model_copy(update={"window": 1024})
    overridden = model.model_copy(update={"layer_kinds": kinds})
    buggy = render("fx_drift_override", family.model_copy(update={"models": [overridden]}))
    rendered = render()
    params = {"max_batch_size": 64, "max_num_tokens": 64, "max_seq_len": 2048}
    runtime = rendered.allocator.KVCacheShim(
        "swa", max_tokens=0, device="meta", **params
    ).quota_bytes()["target"]
    assert rendered.sizing.quota_from_max_tokens("swa", 0, **params)["target"] == runtime
    fixed = buggy.sizing.quota_from_max_tokens("swa", 0, **params)["target"]
    assert fixed > 4 * runtime  # the override bought fixed cost for every request


def test_7_draft_cost_as_total_minus_target(render, family):
    """The draft pool's own shape (a single SWA pool, rounded for resume) is lost when its cost
    is taken as cost(target + draft layers) - cost(target)."""
    from tests.reference import costmodel

    params = PARAMS
    model = family.models[0]
    draft_kind = family.speculative[0].draft.layer_kinds["d"]
    # The draft layer joins the target's stack at its own dtype (bf16) to price "the total".
    joint = model.model_copy(
        update={
            "layer_kinds": {
                **model.layer_kinds,
                "d": draft_kind.model_copy(update={"dtype": "bf16"}),
            },
            "layers": model.layers.model_copy(
                update={"count": 5, "pattern": ["s", "t", "s", "g", "d"]}
            ),
        }
    )
    total_family = family.model_copy(update={"models": [joint]})
    run = costmodel.RuntimeParams(**params)
    total = costmodel.cache_costs(total_family, "swa", "pard4", run)["target"]
    target = costmodel.cache_costs(family, "swa", "pard4", run)["target"]
    buggy_intercept = total.intercept - target.intercept
    # Draft: b = 2*2*16*2 = 128 (bf16). PARD K=4: H = 11, pages(58, 11) = ceil(67/16)+1 = 6.
    # B*per_request + N*ctx = 4*6*16*128 + 16*128 = 51200: what "total minus target" says.
    assert buggy_intercept == 51200
    # Its own single SWA pool rounds for resume: 51200 / 2048 = 25 slots, / float32(0.95)
    # -> 27 slots = 55296, which is what the shim builds.
    rendered = render()
    static = rendered.sizing.cache_costs("swa", speculative="pard4", **params)["draft"]
    shim = rendered.allocator.KVCacheShim(
        "swa", speculative="pard4", max_tokens=0, device="meta", **params
    )
    assert static.intercept == shim.quota_bytes()["draft"] == 55296
    assert buggy_intercept != shim.quota_bytes()["draft"]


def test_8_draft_dtype_charged_at_the_target_rate(render, family):
    profile = family.speculative[0]
    fp8_draft = profile.model_copy(
        update={"draft": profile.draft.model_copy(update={"kv_cache_dtype": "fp8"})}
    )
    buggy = render("fx_drift_dtype", family.model_copy(update={"speculative": [fp8_draft]}))
    rendered = render()
    params = PARAMS

    def make(bug):
        h = harness(rendered, "swa", "pard4", params)
        if bug:
            terms = buggy.sizing.cost_terms(
                "swa", speculative="pard4", semantics="trtllm-v2", **params
            )
            h.cost_override["trtllm-v2"] = lambda m, t: (
                terms[m]["slope"] * t + terms[m]["intercept"]
            )
        return h

    both_ways(make, aligned_batch_sweep)


def test_9_head_count_rounding_at_tp8_mqa(render):
    rendered = render()
    params = {**PARAMS, "tp_size": 8}

    def make(bug):
        h = harness(rendered, "mqa", "pard4", params)
        if bug:  # kv_heads*head_dim//tp: every MQA layer charged 1/8 of its replicated size
            tp1 = {**params, "tp_size": 1}
            terms = rendered.sizing.cost_terms(
                "mqa", speculative="pard4", semantics="trtllm-v2", **tp1
            )
            h.cost_override["trtllm-v2"] = lambda m, t: (
                (terms[m]["slope"] * t + terms[m]["intercept"]) // 8
            )
        return h

    both_ways(make, sweep)


def test_10_full_page_rounding(render):
    """trtllm-v2 does not model whole pages of full attention: claimed as exact it fails;
    the v2 check attributes the excess to full_page_rounding."""
    rendered = render()

    def make(bug):
        h = harness(rendered, "mqa", "pard4", PARAMS)
        if bug:
            v2 = h.terms["trtllm-v2"]
            h.cost_override["exact"] = lambda m, t: v2[m]["slope"] * t + v2[m]["intercept"]
        return h

    h = make(None)
    sweep(h)
    assert "full_page_rounding" in h.stats["target"].explained_by
    with pytest.raises(DiffError):
        sweep(make(True))
