"""The quota arithmetic on a manager's terms (docs/cost-model.md §4, §6, §9): the bytes of T
tokens and its inverse, "exact" whole-page pools, the least quota TensorRT-LLM V2 splits into
kvgen's pages, and one budget split between target and draft. Part of the interpreter
``sizing_core`` binds; it reads validated terms and numbers only.
"""

import functools
import math

from .facts import float32
from .sizing_kinds import TOKENS_PER_BLOCK
from .sizing_options import _BATCH_AT, _CHUNK_AT, _SEQ_LEN_AT, _UTIL_AT, _Options
from .sizing_terms import _Terms
from .trtllm_split import PoolGroup, least_quota

__all__: list[str] = []


def _pool_bytes(terms: _Terms, tokens: int) -> int:
    # "exact": every pool in whole pages, ceil((min(T, cap) + rounding)/span) each (§4; the
    # span is tpb but under DCP, where only the full pool grows, §9).
    total, span = terms.fixed_pool_bytes, terms.span
    for page_bytes, cap, rounding in terms.pools:
        held = tokens if cap < 0 or tokens < cap else cap
        total += page_bytes * -(-(held + rounding) // span)
    return total


def _quota(terms: _Terms, tokens: int, chunk: int) -> int:
    # quota(T) = T*slope + B*per_request + min(T, N)*ctx_swa (§4); a resume-rounded pool is
    # sized for any T.
    if terms.resume_rounding is not None:
        return terms.intercept
    if terms.context_page_rounding is not None:
        return _pool_bytes(terms, tokens)
    fixed = terms.intercept - chunk * terms.ctx_swa
    return tokens * terms.slope + fixed + min(tokens, chunk) * terms.ctx_swa


def _tokens(terms: _Terms, quota: int, chunk: int) -> int | None:
    # The largest T with quota(T) <= quota, None when nothing bounds it (§4).
    if terms.resume_rounding is not None:
        return None if quota >= terms.intercept else 0
    if terms.context_page_rounding is not None:
        return _exact_tokens(terms, quota, chunk)
    slope, ctx = terms.slope, terms.ctx_swa
    room = quota - (terms.intercept - chunk * ctx)
    if room < 0:
        return 0
    if slope == 0 and room >= chunk * ctx:
        return None  # every context token fits and nothing else grows with T
    if room <= chunk * (slope + ctx):
        return room // (slope + ctx)
    return chunk + (room - chunk * (slope + ctx)) // slope


def _exact_tokens(terms: _Terms, quota: int, chunk: int) -> int | None:
    # The largest T whose whole-page pools fit (§4): past N only the full pool grows, one
    # page per tpb tokens; below N every pool grows one page per tpb tokens, so whole periods
    # of tpb tokens are counted and the last period is searched.
    if quota < _pool_bytes(terms, 0):
        return 0
    tpb = terms.span  # tokens per page of every growing pool (tpb * dcp_size under DCP, §9)
    at_chunk = _pool_bytes(terms, chunk)
    if quota >= at_chunk:
        if not terms.slope:
            return None  # nothing grows past N
        page_bytes, _, rounding = terms.pools[-1]  # the full pool
        pages = -(-(chunk + rounding) // tpb) + (quota - at_chunk) // page_bytes
        return pages * tpb - rounding
    period = sum(page_bytes for page_bytes, _, _ in terms.pools)
    low = min((quota - _pool_bytes(terms, 0)) // period * tpb, chunk - 1)
    high = min(low + tpb, chunk)  # _pool_bytes(high) > quota
    while high - low > 1:
        mid = (low + high) // 2
        if _pool_bytes(terms, mid) <= quota:
            low = mid
        else:
            high = mid
    return low


def _engine_split_quota(
    model: str, terms: _Terms, tokens: int, chunk: int, requests: int, scratch: bool
) -> int:
    """The "trtllm-v2" quota of one manager for T = ``tokens``: the least quota from which
    TensorRT-LLM's KV cache manager V2 builds at least the whole-page pools of
    ``_whole_pages`` in every pool group (``trtllm_split``; docs/api.md,
    "quota_for_requests"). ValueError for SWA scratch reuse beside another group."""
    whole = _whole_pages(terms, tokens, chunk)
    tpb = TOKENS_PER_BLOCK
    context = -(-min(-(-tokens // terms.span) * terms.span, chunk) // tpb)
    # (slot bytes, pages, the key of its pool group): chunked life cycles share no group.
    pools = [
        (tpb * b, requests * pages + context, (-i - 1) if attn_chunk else tpb * b)
        for i, (_w, _s, pages, b, attn_chunk) in enumerate(terms.life_cycles)
    ]
    if terms.slope:
        pools.append((terms.span * terms.slope, -(-tokens // terms.span), terms.span * terms.slope))
    groups = len({key for _size, _pages, key in pools})
    if groups <= 1 or terms.resume_rounding is not None:
        return whole  # one pool group: the engine's grain only rounds its quota up
    sliding = any(not cycle[4] for cycle in terms.life_cycles)  # chunked ones never reuse
    if scratch and sliding and terms.manager == "target":  # scratch reuse: targets only (§3)
        raise ValueError(
            f"{model} {terms.manager}: semantics 'trtllm-v2' is the quota TensorRT-LLM's KV "
            f"cache manager V2 (the early-2026 revision, docs/cost-model.md §4) splits over "
            f"its {groups} pool groups, and SWA scratch reuse (a later revision's scratch "
            "pools) is not modelled in that split; use semantics='exact' (kvgen's own pools, "
            "which the shim serves) or scratch_reuse=False"
        )
    outside = whole - sum(size * pages for size, pages, _key in pools)  # states, cross caches
    return _least_split_quota(tuple(pools)) + outside


@functools.lru_cache(maxsize=4096)
def _least_split_quota(pools: tuple[tuple[int, int, int], ...]) -> int:
    """The least quota from which the engine builds ``pages`` slots of every pool group of
    (slot bytes, pages, group key) ``pools``: pools of one key share one group."""
    keys: dict[int, list[int]] = {}  # group key -> [slot bytes, life cycles, pages]
    for size, pages, key in pools:
        group = keys.setdefault(key, [size, 0, 0])
        group[1] += 1
        group[2] += pages
    groups = [PoolGroup((size,), cycles) for size, cycles, _pages in keys.values()]
    return least_quota(groups, [pages for _size, _cycles, pages in keys.values()])


def _whole_pages(terms: _Terms, tokens: int, chunk: int) -> int:
    """The "trtllm-v2" pools of T tokens as the runtime builds them, in whole pages: the full
    pool ceil(T/span) pages and the context pages ceil(min(T, N)/tpb), where the affine
    estimate charges only T and min(T, N) tokens."""
    if terms.resume_rounding is not None:
        return terms.intercept
    tokens = -(-tokens // terms.span) * terms.span
    context = min(tokens, chunk)
    return _quota(terms, tokens, chunk) + (-context % TOKENS_PER_BLOCK) * terms.ctx_swa


def swa_context_tokens(
    offset: int, extra: int, head: int, requests: int, chunk: int, rounding: int, tpb: int
) -> int:
    """The least T whose SWA context pages, ``ceil((min(T, N) + rounding) / tpb)``, cover the
    worst iteration of R requests (§3): each request holds at most pages(w, H) generating, and
    a context chunk of n tokens at most pages(w, n + E) = ceil((w + E + n - 2)/tpb) + 1; the
    first chunk length that adds a page to pages(w, H) is ``first``, every tpb tokens more add
    one. With k chunks of N tokens the most added pages are ``k + (N - k*first) // tpb``,
    which grows with k while first < tpb (most chunks) and shrinks from k = 1 otherwise.
    ``offset`` is w - 2 (pages(w, x) - 1 = ceil((offset + x)/tpb)), or C - 1 - gcd(C, tpb)
    for a chunked life cycle; ``tpb`` the tokens per page (a function of its arguments alone,
    which kvgen's own TensorRT-LLM pool plan reads too: ``kvgen.sizing._trtllm_pools``)."""
    live = -(-(offset + head) // tpb)  # pages(w, H) - 1
    first = live * tpb - (offset + extra) + 1
    if chunk < first:
        return 0
    chunks = min(requests, chunk // first) if first < tpb else 1
    pages = chunks + (chunk - chunks * first) // tpb
    return max(0, (pages - 1) * tpb + 1 - rounding)


def _shares(terms: tuple[_Terms, ...], budget: int, tier: str) -> dict[str, int]:
    """``split_budget`` of a validated budget over validated terms (§6)."""
    if len(terms) == 1:
        return {"target": budget}
    target, draft = terms
    slopes = target.slope + draft.slope
    if tier == "host":
        share = budget * draft.slope // slopes if slopes else 0
        return {"target": budget - share, "draft": share}
    room = budget - (target.intercept + draft.intercept)
    if room < 0 or (room == 0 and slopes > 0):
        raise ValueError(
            f"budget_bytes {budget} does not cover the fixed costs "
            f"{target.intercept} (target) + {draft.intercept} (draft)"
        )
    draft_share = draft.intercept + (room * draft.slope // slopes if slopes else 0)
    return {"target": budget - draft_share, "draft": draft_share}


def _engine_terms(terms: _Terms, head: int, options: _Options) -> dict[str, int]:
    """The engine's terms beside the quota of one manager (§9; docs/api.md, "cost_terms")."""
    batch, chunk, max_seq_len = options[_BATCH_AT], options[_CHUNK_AT], options[_SEQ_LEN_AT]
    named = {}
    if terms.manager == "target" and terms.ctx_swa:
        named["startup_estimate_difference"] = chunk * terms.ctx_swa
    if terms.resume_rounding is None:
        quota = _quota(terms, max_seq_len, chunk)
        util32 = float32(options[_UTIL_AT])
        named["watermark_quota"] = math.ceil(quota / util32) - quota
    # History 1 holds no stale SWA page (§3): every life cycle holds ceil((1 + H)/tpb) pages.
    paged = terms.slope + sum(cycle[3] for cycle in terms.life_cycles)
    if paged:
        pages = -(-(1 + head) // terms.span)  # span: tpb, or tpb * dcp_size under DCP (§9)
        named["cuda_graph_padding"] = pages * terms.span * paged
    if terms.per_request:
        named["overlap_scheduler_requests"] = batch * terms.per_request
    return named


def _cycle_name(window: int, sinks: int, chunk: int) -> str:
    if chunk:
        return f"c{chunk}"
    return f"w{window}s{sinks}" if sinks else f"w{window}"
