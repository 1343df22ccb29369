"""How TensorRT-LLM divides one KV budget between its target and draft managers, per revision.

Two revisions are modelled (docs/cost-model.md, "TensorRT-LLM revisions"), the trtllm releases
of ``kvgen.sizing.engines_registry`` (``revision`` is a release's version; what differs is read from
the release's fields, never from its name):

- ``"early-2026"`` (the registry's default ``trtllm``): each manager
  gets its intercept and the rest is split by slope, ``sizing.split_budget`` (§6);
- ``"38198e34"`` (NVIDIA/TensorRT-LLM commit 38198e34, ``_util.py``
  ``KvCacheCreator._compute_draft_budget_shares``): both intercepts are reserved, the rest is
  weighed by what one max-length request spends from the slope-funded budget
  (:func:`manager_costs`, the engine's ``CacheCost.bytes_per_request``) when both managers
  report it, else by slope; the draft share is capped at ``max_batch_size`` full-length
  mirrors and floored at one mirror's allocator quota (``quota_per_request``, present when
  ``avg_seq_len`` is set and ``pool_ratio`` is not).

What one request spends (``get_cache_bytes_per_request`` at that revision), with H the
generation headroom (E + the step width, §2) and ``full = ceil((S + H) / tpb) * tpb``:

- target: declines (None: the slope split) when no sliding window bounds a layer; else
  ``slope * full`` (its windows' pages are already in the intercept);
- draft: every mirror is reserved at the request's full context whatever the drafter's own
  windows, ``sum over layers b_l * full`` less the window pages its intercept carries.

A manager's quota for one request (``get_cache_quota_per_request``): per layer
``ceil((retained / tpb) / u) * tpb * b_l`` with u the float32 resume watermark, each rounded
up to the grain of their sum (:func:`gpu_alloc_granularity`), retained ``full`` for full
layers and draft mirrors, the window pages otherwise.

``tests/generated/test_trtllm_static_goldens.py`` compares every number here with the
engine's own functions run on CPU (``tests/fixtures/engines/trtllm_static.json``).
Stdlib only; reads a bound sizing module (``generated.<family>.sizing``) like
``kvgen.sizing._trtllm_pools``.
"""

from __future__ import annotations

import math
import types
from typing import Any, NamedTuple

from .engines_registry import TRTLLM, Release, default_release, release, releases_of
from .facts import float32

__all__ = [
    "DEFAULT_REVISION",
    "REVISIONS",
    "HybridCost",
    "ManagerCost",
    "draft_budget_shares",
    "gpu_alloc_granularity",
    "host_tier_quota",
    "hybrid_cost",
    "hybrid_quota_for_tokens",
    "hybrid_tokens_for_quota",
    "manager_costs",
    "pool_split_inputs",
    "split_budget",
    "synced_quota",
]

# The revisions whose split kvgen models, oldest first: the trtllm releases of the engine
# registry (``kvgen.sizing.engines_registry``, which says what each one does), and the default one.
REVISIONS = tuple([r.version for r in releases_of(TRTLLM)])
DEFAULT_REVISION = default_release(TRTLLM).version
_GPU_PAGE = 2 << 20


class ManagerCost(NamedTuple):
    """One manager's cost as the engine's ``CacheCost`` carries it at a revision: bytes =
    slope x T + intercept, and (38198e34) what one max-length request spends from the slope
    budget and the allocator quota it makes the manager insist on (None: not reported)."""

    slope: int
    intercept: int
    bytes_per_request: int | None = None
    quota_per_request: int | None = None


def gpu_alloc_granularity(quota: int) -> int:
    """The GPU pool grain for ``quota`` bytes at 38198e34 (``_gpu_alloc_granularity``, the C++
    ``cacheTierGranularity``): 2 MiB doubled once per power of two of whole GiB, up to 32 MiB;
    integer arithmetic, where the early revision's ``kvgen.sizing.trtllm_split.gpu_grain`` takes a
    float logarithm of the quota."""
    ratio = quota // (_GPU_PAGE * 512)
    exponent = 0 if ratio == 0 else min(4, ratio.bit_length() - 1)
    return _GPU_PAGE << exponent


def _revision(revision: str) -> Release:
    """The trtllm release named ``revision``; ValueError naming the ones modelled."""
    if revision not in REVISIONS:
        raise ValueError(
            f"revision must be one of {', '.join(map(repr, REVISIONS))}, got {revision!r}"
        )
    return release(f"{TRTLLM.name}=={revision}")


def _layers_of(
    sizing: types.ModuleType, model: str, speculative: str, manager: str, tp: int
) -> list[tuple[int, int, int]]:
    """(bytes per token, layer count, life-cycle index or -1 for full) of each cached kind of
    one manager on a single rank (the layer members ``sizing_split`` keeps)."""
    for name, members, states, crosses, _cycles in sizing.manager_layers(model, speculative):
        if name != manager:
            continue
        if states or crosses:
            raise ValueError(
                f"{model} {manager}: the per-request costs of revision 38198e34 are modelled "
                "for attention-only managers (no recurrent or cross-attention rows)"
            )
        out = []
        for _before, count, slot, kv_heads, per_head, fixed, scaled in members:
            bpt = fixed + -(-kv_heads // tp) * per_head if scaled is None else scaled(tp)
            out.append((bpt, count, slot))
        return out
    raise ValueError(f"{model}: no {manager} manager for speculative {speculative!r}")


def manager_costs(
    sizing: types.ModuleType,
    model: str,
    *,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
    avg_seq_len: int | None = None,
    pool_ratio: tuple[float, ...] | None = None,
    max_util_for_resume: float = 0.95,
    revision: str = DEFAULT_REVISION,
) -> dict[str, ManagerCost]:
    """Per manager (target, and draft where the profile has a separate draft pool), the cost
    the engine's split reads at ``revision`` ("early-2026": slope and intercept only). The
    slope and intercept are kvgen's "trtllm-v2" terms (§4); 38198e34 adds the per-request
    spend and quota of the module docstring. ValueError where they are not modelled:
    recurrent or cross-attention pools, chunked attention, sink tokens, pp_size > 1, DCP."""
    found = _revision(revision)
    terms = sizing.manager_terms(
        model, speculative=speculative, max_batch_size=max_batch_size,
        max_num_tokens=max_num_tokens, max_seq_len=max_seq_len, tp_size=tp_size,
        max_util_for_resume=max_util_for_resume,
    )  # fmt: skip
    costs = {t.manager: ManagerCost(t.slope, t.intercept) for t in terms}
    if not found.per_request_split:
        return costs
    tpb = sizing.TOKENS_PER_BLOCK
    seq = max_seq_len  # as validated by manager_terms
    head = sizing.headroom(speculative)
    full = -(-(seq + head) // tpb) * tpb
    util = float32(max_util_for_resume)
    floors = avg_seq_len is not None and pool_ratio is None
    tp = 1 if type(tp_size) is not int else tp_size
    for t in terms:
        if t.span != tpb or any(cycle[1] or cycle[4] for cycle in t.life_cycles):
            raise ValueError(
                f"{model} {t.manager}: the per-request costs of revision 38198e34 are modelled "
                "without sink tokens, chunked attention or decode context parallelism"
            )
        # Tokens one request keeps in each life cycle's layers: its window pages (the
        # engine's count, kvgen's pages(w, H) without sinks), never more than the full length.
        windows = [min(pages * tpb, full) for _w, _s, pages, _b, _c in t.life_cycles]
        draft = t.manager == "draft"
        layers = _layers_of(sizing, model, speculative, t.manager, tp)
        slots = {slot for _b, _n, slot in layers if slot >= 0}
        if windows and len(slots) != len(windows):  # some windows, not all, reach max_seq_len
            raise ValueError(
                f"{model} {t.manager}: the per-request costs of revision 38198e34 are modelled "
                "where every window is below max_seq_len or none is"
            )
        spend = 0
        retained_bytes = []  # (bytes per token, layers, tokens one request keeps)
        for bpt, count, slot in layers:
            # a window of at least max_seq_len is full attention (the engine's rule too)
            full_layer = slot < 0 or not windows
            covered = 0 if full_layer else windows[slot]
            retained = full if draft or full_layer else covered
            spend += count * bpt * max(retained - covered, 0)
            retained_bytes.append((bpt, count, retained))
        per_request: int | None = spend
        if not draft and not windows:
            per_request = None  # no window bounds the target: the engine keeps the slope split
        quota = None
        if floors:
            per_layer = [
                (math.ceil((retained // tpb) / util) * tpb * bpt, count)
                for bpt, count, retained in retained_bytes
            ]
            grain = gpu_alloc_granularity(sum(b * n for b, n in per_layer))
            quota = sum(-(-b // grain) * grain * n for b, n in per_layer) or None
        costs[t.manager] = ManagerCost(t.slope, t.intercept, per_request, quota)
    return costs


# What 38198e34 says where _compute_draft_budget_shares finds no split of a GPU budget (its
# caller, KvCacheCreator's budget split, raises for max_gpu_total_bytes): the engine's words,
# its numbers in GiB left out (kvgen's own message above gives them in bytes).
_INFEASIBLE_SPLIT = (
    "TensorRT-LLM 38198e34 refuses to start: 'KV cache GPU budget (...) is insufficient "
    "after the combined fixed cost (..., e.g. SWA or mamba state) for target+draft. Increase "
    "free_gpu_memory_fraction or max_gpu_total_bytes, or reduce max_batch_size (the fixed "
    "cost scales with batch size).' (tensorrt_llm/_torch/pyexecutor/_util.py)"
)


def draft_budget_shares(
    budget: int, target: ManagerCost, draft: ManagerCost, max_batch_size: int
) -> dict[str, int]:
    """38198e34's ``_compute_draft_budget_shares``: the intercepts first; the rest by the
    per-request spend when both report one (their sum positive), else by slope; under
    per-request weights the draft at most ``max_batch_size`` mirrors (in quota units when
    known); never under one mirror's quota. ValueError where the engine declines the split
    (its caller then raises for a GPU budget)."""
    fixed = target.intercept + draft.intercept
    room = budget - fixed
    slopes = target.slope + draft.slope
    if room < 0 or (room == 0 and slopes > 0):
        raise ValueError(
            f"budget_bytes {budget} does not cover the fixed costs {target.intercept} "
            f"(target) + {draft.intercept} (draft): {_INFEASIBLE_SPLIT}"
        )
    weighted = (
        target.bytes_per_request is not None
        and draft.bytes_per_request is not None
        and target.bytes_per_request + draft.bytes_per_request > 0
    )
    if weighted:
        weights = (target.bytes_per_request or 0, draft.bytes_per_request or 0)
    else:
        weights = (target.slope, draft.slope)
    total = weights[0] + weights[1]
    share = room * weights[1] // total if total > 0 else 0
    if weighted and max_batch_size > 0:
        mirror = draft.quota_per_request
        if mirror is None:
            mirror = draft.bytes_per_request or 0
        share = min(share, max_batch_size * mirror)
    if draft.quota_per_request is not None:
        if draft.quota_per_request > room:
            raise ValueError(
                f"budget_bytes {budget} cannot fund the draft pool's quota for one "
                f"max-length request ({draft.quota_per_request} B) beyond the fixed costs "
                f"{fixed} B: {_INFEASIBLE_SPLIT}"
            )
        share = max(share, draft.quota_per_request)
    draft_share = draft.intercept + share
    return {"target": budget - draft_share, "draft": draft_share}


def split_budget(
    sizing: types.ModuleType,
    model: str,
    budget_bytes: int,
    *,
    tier: str = "gpu",
    revision: str = DEFAULT_REVISION,
    avg_seq_len: int | None = None,
    pool_ratio: tuple[float, ...] | None = None,
    **common: Any,
) -> dict[str, int]:
    """``budget_bytes`` shared between the target and a separate draft pool as the engine's
    ``revision`` shares it. "early-2026" is ``sizing.split_budget`` unchanged; "38198e34"
    splits a GPU budget with :func:`draft_budget_shares` and a host or disk budget by slope
    alone (that revision drops the intercepts and per-request estimates for offload tiers,
    as the early one does). ``common``: the options of ``sizing.split_budget``
    (max_batch_size, max_num_tokens, max_seq_len, speculative, tp_size, max_util_for_resume)."""
    if not _revision(revision).per_request_split or tier != "gpu":
        shares: dict[str, int] = sizing.split_budget(model, budget_bytes, tier=tier, **common)
        return shares
    costs = manager_costs(sizing, model, avg_seq_len=avg_seq_len, pool_ratio=pool_ratio,
                          revision=revision, **common)  # fmt: skip
    if "draft" not in costs:
        sizing.split_budget(model, budget_bytes, tier=tier, **common)  # validates the budget
        return {"target": budget_bytes}
    return draft_budget_shares(budget_bytes, costs["target"], costs["draft"],
                               common["max_batch_size"])  # fmt: skip


def host_tier_quota(
    quota: int,
    local_ranks: int = 1,
    mem_available: float = math.inf,
    memlock_limit: float = math.inf,
    shares_device_memory: bool = False,
) -> int:
    """The host tier 38198e34 provisions for one rank when no ``host_cache_size`` is given
    (``_compute_auto_host_tier_quota``): the device quota, at most half the node's available
    memory per co-located rank and 80% of the page-lock limit; a non-positive result falls
    back to the device quota, or to no tier (0) where host and device share one memory."""
    if shares_device_memory and mem_available != math.inf:
        mem_available = max(0.0, mem_available - quota)
    candidates = [quota]
    if mem_available != math.inf:
        candidates.append(int(mem_available / local_ranks * 0.5))
    if memlock_limit != math.inf:
        candidates.append(int(memlock_limit * 0.8))
    host = min(candidates)
    if host <= 0:
        return 0 if shares_device_memory else quota
    return host


def synced_quota(
    quotas: list[int], quota_for_tokens: Any, tokens_for_quota: Any, max_util_for_resume: float
) -> list[int]:
    """38198e34's multi-rank sync (``KVCacheManagerV2.__init__``): every rank converts
    ``quota * u`` to tokens, the ranks take the least (allreduce MIN), and each rank's quota
    becomes ``min(q, ceil(quota(least) / u))`` (never raised). ``quota_for_tokens`` and
    ``tokens_for_quota`` are one rank's conversions (its terms); u the float32 watermark."""
    util = float32(max_util_for_resume)
    tokens = [tokens_for_quota(int(q * util)) for q in quotas]
    least = min(tokens)
    if math.isinf(least):
        return list(quotas)
    return [min(q, math.ceil(quota_for_tokens(least) / util)) for q in quotas]


def pool_split_inputs(
    *,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    extra_tokens: int,
    max_draft_len: int,
    avg_seq_len: int | None = None,
    pool_ratio: tuple[float, ...] | None = None,
) -> dict[str, Any]:
    """What 38198e34's manager hands its pool split (``KVCacheManagerV2._build_base_config``):
    with ``avg_seq_len`` set and no ``pool_ratio``, a ``typical_step`` of one context request
    of N + E tokens and B - 1 generating requests of ``avg_seq_len`` tokens with history
    ``max(0, avg_seq_len - K - 1)``, and one constraint (a context request of N + E tokens);
    otherwise neither; ``initial_pool_ratio`` is ``pool_ratio``. Each request is
    (capacity, history, beam width 1). ValueError for ``avg_seq_len`` over max_seq_len (the
    engine raises the same)."""
    typical = None
    constraints: list[list[tuple[int, int, int]]] = []
    if pool_ratio is None and avg_seq_len is not None:
        if avg_seq_len > max_seq_len:
            raise ValueError(
                f"avg_seq_len ({avg_seq_len}) must be at most max_seq_len ({max_seq_len})"
            )
        context = (max_num_tokens + extra_tokens, 0, 1)
        history = max(0, avg_seq_len - max_draft_len - 1)
        typical = [context] + [(avg_seq_len, history, 1)] * (max_batch_size - 1)
        constraints.append([context])
    ratio = None if pool_ratio is None else list(pool_ratio)
    return {"typical_step": typical, "constraints": constraints, "initial_pool_ratio": ratio}


class HybridCost(NamedTuple):
    """A Mamba hybrid's one manager at 38198e34 (``MambaHybridCacheManagerV2``): its affine
    static cost (slope, intercept) and the terms its runtime conversions read: attention bytes
    per token of history, recurrent-state bytes of one slot (every Mamba layer's conv and SSM
    state), resident requests, reserved dummy slots, the periodic snapshot interval (None:
    no periodic snapshots) and tokens per page."""

    slope: int
    intercept: int
    attention_bytes_per_token: int
    state_bytes: int
    resident: int
    reserved: int
    interval: int | None
    tokens_per_block: int


def hybrid_cost(
    sizing: types.ModuleType,
    model: str,
    *,
    max_batch_size: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
    enable_block_reuse: bool = True,
    periodic_snapshot_interval: int | None = None,
    attention_dp: bool = False,
) -> HybridCost:
    """38198e34's cost of a Mamba hybrid (attention and recurrent layers in one V2 manager,
    ``_estimate_mamba_hybrid_cache_cost`` as ``MambaHybridCacheManagerV2`` calls it): with
    R = B resident requests, r = 1 reserved dummy slot (+1 under attention DP), s the state
    bytes of one slot, a the attention bytes per token and the periodic snapshot interval P
    (only under block reuse, at most max_seq_len; kvgen names no fixed snapshot offsets):

    slope = a + ceil(s / P), intercept = (R + r) * s + R * a * tpb (one partial attention
    page per request once snapshots exist); without snapshots slope = a, intercept =
    (R + r) * s. ValueError for a model whose layers hold both (a parallel hybrid), windows,
    cross attention or a separate draft pool."""
    tpb = sizing.TOKENS_PER_BLOCK
    ranked = sizing.rank_layers(model, speculative, tp_size=1 if attention_dp else tp_size)
    target = ranked[0]
    _name, slope, sums, groups, states, crosses, _cross = target
    kinds = sizing.TABLES.models[model].layers.kinds.values()
    parallel = any(k.attention == "full" and k.ssm_heads for k in kinds)
    if len(ranked) > 1 or groups or crosses or not states or parallel:
        raise ValueError(
            f"{model}: revision 38198e34's Mamba hybrid cost is modelled for one manager of "
            "full-attention and recurrent layers (no windows, cross attention, parallel "
            "hybrid layers or separate draft pool)"
        )
    state = sums[0]
    interval = periodic_snapshot_interval
    if not enable_block_reuse or interval is None or interval <= 0 or interval > max_seq_len:
        interval = None
    resident, reserved = max_batch_size, 1 + attention_dp
    static_slope, intercept = slope, (resident + reserved) * state
    if interval is not None:
        static_slope += -(-state // interval)
        intercept += resident * slope * tpb
    return HybridCost(static_slope, intercept, slope, state, resident, reserved, interval, tpb)


def hybrid_quota_for_tokens(cost: HybridCost, tokens: int) -> int:
    """The runtime quota for ``tokens`` tokens of history (``_get_quota_from_max_tokens``):
    a x T, and (R + r + snapshots) state slots with snapshots = T // P, and R partial attention
    pages once a snapshot is planned."""
    snapshots = tokens // cost.interval if cost.interval is not None and tokens > 0 else 0
    quota = tokens * cost.attention_bytes_per_token
    quota += (cost.resident + cost.reserved + snapshots) * cost.state_bytes
    if snapshots > 0:
        quota += cost.resident * cost.attention_bytes_per_token * cost.tokens_per_block
    return quota


def hybrid_tokens_for_quota(cost: HybridCost, quota: int) -> float:
    """The most tokens whose :func:`hybrid_quota_for_tokens` fits ``quota``
    (``_get_max_tokens_from_quota``, by the engine's doubling and bisection): 0 when not even
    the live states fit, inf past 2**62."""
    if hybrid_quota_for_tokens(cost, 0) > quota:
        return 0
    low, high = 0, 1
    while hybrid_quota_for_tokens(cost, high) <= quota:
        low, high = high, high * 2
        if high >= 1 << 62:
            return math.inf
    while low + 1 < high:
        mid = (low + high) // 2
        low, high = (mid, high) if hybrid_quota_for_tokens(cost, mid) <= quota else (low, mid)
    return low
