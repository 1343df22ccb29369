"""``quota_for_requests`` (docs/cost-model.md §3, §4) proven by the shim: given that quota, R
requests of S tokens never run out of pages under the adversarial workloads and the worst
iteration of every SWA life cycle; given one byte less, the shim plans one page less in the
pool that set the quota and some workload runs out: R requests at their last step (a full
pool), or the worst iteration of an SWA life cycle (R - k requests at their peak step beside
k context chunks at their worst positions). Where the quota is the pools of zero tokens (a
draft rounded for the resume watermark, or SWA pools whose context rounding already covers
the worst iteration), one byte less is refused outright: no smaller plan exists. Every
shipped family and fixture, every profile, R = 3 and S just past the longest window.
"""

from __future__ import annotations

import math

import pytest
from kvgen._spec.loader import load_family
from kvgen.runtime._pages import chunk_live_pages, live_pages

from tests.diff_report import _longest_window
from tests.reference import costmodel
from tests.workloads import (
    FIXTURE_SPECS,
    ROOT,
    Harness,
    generate,
    prefill,
    render_family,
    run_adversarial,
    shim_errors,
)

REQUESTS = 3


def _combos():
    specs = sorted(FIXTURE_SPECS.glob("*.yaml"))
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        spec = ROOT / "schema" / "families" / f"{sizing.parent.name}.yaml"
        if spec.exists():
            specs.append(spec)
    return [
        (spec, model.name, profile)
        for spec in specs
        for family in [load_family(spec)]
        for model in family.models
        for profile in family.profiles_for(model.name)
    ]


COMBOS = _combos()
_RENDERED: dict = {}


def _setup(spec, model, profile, tmp_path_factory):
    if spec not in _RENDERED:
        out = tmp_path_factory.mktemp("serving")
        _RENDERED[spec] = render_family(load_family(spec), spec.read_bytes(), out, spec.name)
    rendered = _RENDERED[spec]
    tpb = rendered.family.tokens_per_block
    native = rendered.family.model(model).max_seq_len
    # Long enough that every SWA window's stale boundary passes every page alignment (the
    # pools hold pages(w, H) per request, reached only past the window), no longer.
    head = rendered.sizing.headroom(profile)
    longest = max(_longest_window(rendered, model), _chunk_reach(rendered, model, tpb))
    seq_len = 2 * tpb + 5 if not longest else longest + head + 2 * tpb + 5
    return rendered, {
        "max_batch_size": REQUESTS,
        "max_num_tokens": tpb + 3,
        "max_seq_len": min(native, seq_len),
        "semantics": "exact",
    }


def _chunk_reach(rendered, model: str, tpb: int) -> int:
    """History past which every chunked life cycle has shown every stale-page alignment: a
    chunk boundary q*C falls at q*C mod tpb, which repeats every tpb / gcd(C, tpb) chunks
    (§3); 0 without chunked kinds."""
    family = rendered.family
    stacks = [family.model(model)]
    for profile in family.speculative:
        if profile.applies_to(model):
            stacks += [s for s in (profile.draft, profile.extra_layers) if s is not None]
    chunks = [
        kind.chunk
        for stack in stacks
        for kind in stack.layer_kinds.values()
        if kind.attention == "chunked" and kind.chunk
    ]
    return max((c * (tpb // math.gcd(c, tpb) + 1) for c in chunks), default=0)


def _quota(rendered, model, profile, params):
    return rendered.sizing.quota_for_requests(
        model,
        requests=params["max_batch_size"],
        seq_len=params["max_seq_len"],
        speculative=profile,
        max_num_tokens=params["max_num_tokens"],
    )


def serve(h: Harness, accept: int) -> None:
    """All R requests together: prompts of S-1 tokens chunked by N, then generation steps
    to S with ``accept`` drafts accepted; every request peaks at capacity S-1+H at once."""
    shim = h.shim
    rids = list(range(shim.max_batch_size))
    for rid in rids:
        h.add(rid)
    prefill(h, dict.fromkeys(rids, shim.max_seq_len - 1))
    generate(h, rids, shim.max_seq_len, lambda rid, step: accept)
    for rid in rids:
        h.free(rid)


def _swa_cycles(shim) -> list[tuple[str, int, int, int]]:
    """(manager, window, sink tokens, chunk) of every SWA (or chunked) life cycle the shim
    built."""
    return [
        (name, cycle.window, cycle.sink_tokens, cycle.chunk)
        for name, manager in shim.managers.items()
        for cycle in manager.cycles
        if cycle.kind == "swa"
    ]


def worst_iteration(h: Harness, window: int, sinks: int, attn_chunk: int = 0) -> None:
    """The iteration that holds the most pages on one SWA life cycle, found by brute force
    over the runtime's own page count (``live_pages``, §3): R - k requests at the history
    whose generation step holds the most pages, beside k context chunks (N tokens in all) at
    their worst positions, for the best k and split (k - 1 chunks of the shortest length
    that holds more pages than a generation step, the rest of N in the last)."""
    shim = h.shim
    tpb, batch, chunk = shim.tokens_per_block, shim.max_batch_size, shim.max_num_tokens
    seq_len, extra, head = shim.max_seq_len, shim.extra_tokens, shim.headroom

    def live(history: int, capacity: int) -> int:
        if attn_chunk:  # pages before the chunk's start are stale (§3)
            return chunk_live_pages(history, capacity, attn_chunk, tpb)
        return live_pages(history, capacity, window, sinks, tpb)

    gen_pages, gen_at = max((live(p, p + head), p) for p in range(seq_len))

    def best_chunk(n: int) -> tuple[int, int]:  # (pages, position) with p + n <= S - 1
        return max((live(p, p + n + extra), p) for p in range(seq_len - n))

    first = next((n for n in range(1, chunk + 1) if best_chunk(n)[0] > gen_pages), None)
    plans = [(batch * gen_pages, [])]
    for k in range(1, min(batch, chunk // first) + 1) if first else ():
        lengths = [first] * (k - 1) + [chunk - (k - 1) * first]
        held = [best_chunk(n) for n in lengths]
        pages = (batch - k) * gen_pages + sum(pages for pages, _p in held)
        plans.append((pages, [(n, p) for n, (_pages, p) in zip(lengths, held, strict=True)]))
    _pages, chunks = max(plans, key=lambda plan: plan[0])
    rids = list(range(7000, 7000 + batch))
    for rid in rids:
        h.add(rid)
    starts = {rid: p for rid, (_n, p) in zip(rids, chunks, strict=False)}
    generating = rids[len(chunks) :]
    prefill(h, {**starts, **dict.fromkeys(generating, gen_at)})
    h.forward(
        {rid: n for rid, (n, _p) in zip(rids, chunks, strict=False)},
        dict.fromkeys(generating, 0),
    )
    for rid in rids:
        h.free(rid)


def _run(rendered, model, profile, params, quota, adversarial=True, pool_groups="engine"):
    shim = rendered.allocator.KVCacheShim(
        model,
        speculative=profile,
        quota_bytes=quota,
        device="meta",
        pool_groups=pool_groups,
        **params,
    )
    harness = Harness(shim, rendered.sizing, params)
    serve(harness, 0)
    serve(harness, shim.draft_slots)
    for _manager, window, sinks, attn_chunk in _swa_cycles(shim):
        worst_iteration(harness, window, sinks, attn_chunk)
    if adversarial:
        run_adversarial(harness, thorough=False)
    return shim


@pytest.mark.parametrize(
    ("spec", "model", "profile"), COMBOS, ids=[f"{c[0].stem}-{c[1]}-{c[2]}" for c in COMBOS]
)
def test_quota_for_requests_is_enough_and_least(tmp_path_factory, spec, model, profile):
    rendered, params = _setup(spec, model, profile, tmp_path_factory)
    quota = _quota(rendered, model, profile, params)
    # Enough with TensorRT-LLM V2's pool groups (the default) and with one pool per life
    # cycle. Least per life cycle: where life cycles of equal slot size share one pool, a
    # cycle may use pages another leaves free, so one byte less may still serve there.
    _run(rendered, model, profile, params, quota)  # never runs out of pages
    shim = _run(rendered, model, profile, params, quota, pool_groups="life_cycle")
    assert shim.quota_bytes() == quota
    errors = shim_errors(shim)
    tpb, seq_len = rendered.family.tokens_per_block, params["max_seq_len"]
    head = rendered.sizing.headroom(profile)
    zero = rendered.sizing.quota_from_max_tokens(model, 0, speculative=profile, **params)
    for manager, bytes_ in quota.items():
        less = {**quota, manager: bytes_ - 1}
        if bytes_ == zero[manager]:
            # The pools of zero tokens (or a resume-rounded draft, sized for any T): the shim
            # plans nothing smaller, so one byte less cannot be served at all.
            with pytest.raises(errors.QuotaTooSmallError):
                _run(rendered, model, profile, params, less, False, "life_cycle")
            continue
        if "full" in shim.managers[manager].pools:
            # The full pool holds exactly R * ceil((S - 1 + H)/tpb) pages: one byte less of
            # quota plans one page less, and R requests at their last step run out.
            pages = REQUESTS * -(-(seq_len - 1 + head) // tpb)
            assert shim.managers[manager].pools["full"].pages == pages
        # One byte less plans one page less in the pool that set T: R requests at their last
        # step, or the worst iteration of an SWA life cycle, run out.
        with pytest.raises(errors.OutOfPagesError):
            _run(rendered, model, profile, params, less, False, "life_cycle")


@pytest.mark.parametrize(
    ("spec", "model", "profile"), COMBOS, ids=[f"{c[0].stem}-{c[1]}-{c[2]}" for c in COMBOS]
)
def test_generic_model_agrees(tmp_path_factory, spec, model, profile):
    rendered, params = _setup(spec, model, profile, tmp_path_factory)
    for semantics in ("exact", "trtllm-v2"):
        for requests, seq_len in ((1, 1), (3, 17), (5, params["max_seq_len"])):
            kw = dict(params, max_batch_size=requests, max_seq_len=seq_len, semantics=semantics)
            generic = costmodel.quota_for_requests(
                rendered.family, model, profile, costmodel.RuntimeParams(**kw)
            )
            static = rendered.sizing.quota_for_requests(
                model,
                requests=requests,
                seq_len=seq_len,
                speculative=profile,
                max_num_tokens=params["max_num_tokens"],
                semantics=semantics,
            )
            assert static == generic, (semantics, requests, seq_len)


def test_quota_for_requests_by_hand(tmp_path_factory):
    # fx_mqa_pages: 2,048 B/token, tpb 64, page 131,072 B. R = 2 requests of S = 100, H = 1:
    # each peaks at 99 + 1 = 100 tokens = 2 pages, so P = 4 pages = 524,288 B, planned from
    # T = 4*64 - 2*63 - 64 + 1 = 67 (ceil((67 + 126)/64) = 4, ceil((66 + 126)/64) = 3).
    spec = FIXTURE_SPECS / "pages" / "fx_mqa_pages.yaml"
    rendered = render_family(
        load_family(spec), spec.read_bytes(), tmp_path_factory.mktemp("h"), "x"
    )
    kw = dict(requests=2, seq_len=100, max_num_tokens=100)
    assert rendered.sizing.quota_for_requests("mqa", **kw) == {"target": 524_288}
    plain = dict(max_batch_size=2, max_num_tokens=100, max_seq_len=100, semantics="exact")
    assert rendered.sizing.quota_from_max_tokens("mqa", 67, **plain) == {"target": 524_288}
    assert rendered.sizing.quota_from_max_tokens("mqa", 66, **plain) == {"target": 393_216}


@pytest.mark.parametrize(
    ("spec", "model", "profile"), COMBOS, ids=[f"{c[0].stem}-{c[1]}-{c[2]}" for c in COMBOS]
)
def test_quota_for_requests_is_enough_under_trtllm_v2(tmp_path_factory, spec, model, profile):
    # "trtllm-v2" pools are ceil(T/tpb) full pages and ceil(min(T, N)/tpb) context pages; the
    # answer is those pools in whole pages, so R requests run to their last step (before,
    # R * (S - 1 + H) tokens held fewer pages than they need). The worst iteration of an SWA
    # life cycle without a spare page needs the context rounding only "exact" charges
    # (context_page_rounding, docs/cost-model.md §4): "trtllm-v2" pools never hold it. Where
    # several engine pool groups share the quota it is the least one TensorRT-LLM V2's split
    # builds those pools from (more than their bytes): the shim plans at least those pools
    # from it, its own pools holding no more than the quota.
    rendered, params = _setup(spec, model, profile, tmp_path_factory)
    params = dict(params, semantics="trtllm-v2")
    quota = rendered.sizing.quota_for_requests(
        model,
        requests=params["max_batch_size"],
        seq_len=params["max_seq_len"],
        speculative=profile,
        max_num_tokens=params["max_num_tokens"],
        semantics="trtllm-v2",
    )
    shim = rendered.allocator.KVCacheShim(
        model, speculative=profile, quota_bytes=quota, device="meta", **params
    )
    built = shim.quota_bytes()
    assert all(built[name] <= quota[name] for name in quota)
    harness = Harness(shim, rendered.sizing, params)
    serve(harness, 0)  # never runs out of pages
    serve(harness, shim.draft_slots)
