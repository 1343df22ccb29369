"""kvgen's serving plan carried into TensorRT-LLM's KV cache manager V2 (static side, stdlib).

The engine (the early-2026 revision ``bench/engines/trtllm_source.py`` pins) is given one byte
quota per cache manager and builds its own pools from it: it merges life cycles of equal slot
size into pool groups and splits the quota in proportion to slot bytes x life cycles
(:mod:`kvgen.sizing.trtllm_split`), so a sliding-window model gets about as many full pages as
window pages. For gemma3_1b (4 requests to 2,048 tokens, max_num_tokens 256) kvgen plans 128
full + 40 window pages, 91,226,112 B; from those bytes the engine builds 56 + 53 and runs out
of full pages. ``quota_for_requests(..., semantics="trtllm-v2")`` therefore answers the least
quota from which the engine builds kvgen's pages in every group (211,812,352 B there).

* :func:`engine_pool_plan` is kvgen's plan as the engine's pool groups, derived here apart
  from ``quota_for_requests`` (docs/cost-model.md §3, §4);
* :func:`engine_pools` reports, per cache manager and pool group, kvgen's pages and the
  engine's pages for a quota;
* :func:`engine_quota_for_requests` is the least quota under the engine's split from that
  plan: equal to ``quota_for_requests`` under ``"trtllm-v2"`` for the managers it covers
  (the tests compare the two derivations); kept as that independent derivation.

Covered: attention-only managers (full, sliding and chunked life cycles) whose every life
cycle's buffers have one size (K and V alike, one kind of layer per life cycle, as this
engine revision requires: ``create_storage_config`` refuses more); anything else (recurrent
or cross pools, decode context parallelism, a resume-rounded draft) is refused with
``ValueError`` rather than guessed.

Everything here reads a sizing module through its public interface (docs/api.md, "The
interface of a sizing module"): its ``TABLES``, ``trtllm_plans`` and ``trtllm_held``.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from ._trtllm_budget import (
    DEFAULT_REVISION,
    ManagerCost,
    _revision,
    draft_budget_shares,
    gpu_alloc_granularity,
    manager_costs,
    pool_split_inputs,
    split_budget,
)
from ._trtllm_pool_split import (
    PoolSplit,
    TrtllmLifeCycle,
    checked_ratio,
    fallback_ratio,
    grains_for_slots,
    group_ratio,
    life_cycle_floors,
    one_pool_slot_counts,
    pool_groups,
    ratio_to_slot_count_list,
    split_quota,
)
from .sizing_kinds import kind_row
from .sizing_quota import swa_context_tokens
from .trtllm_split import (
    PoolGroup,
    TrtllmPlan,
    least_quota,
    slots_for_quota,
    whole_grains,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "EnginePool",
    "EngineStorage",
    "engine_budget_plan",
    "engine_plan_for_quota",
    "engine_plan_for_split",
    "engine_pool_plan",
    "engine_pool_ratio",
    "engine_pools",
    "engine_quota_for_requests",
    "engine_storage",
    "engine_storage_split",
    "pool_ratio_for_quota",
    "split_frame",
    "split_slots",
    "trtllm_emit",
]


class _ServedNeeds(TypedDict):
    requests: int
    seq_len: int
    max_num_tokens: int


class _Served(_ServedNeeds, total=False):
    """The serving keywords of :func:`engine_pool_plan`, as its callers pass them on."""

    speculative: str
    tp_size: int
    pp_size: int
    pp_rank: int


class EnginePool(NamedTuple):
    """One engine pool group: kvgen's life cycles in it, one slot's bytes, the pages kvgen
    plans for it and (from :func:`engine_pools`) the pages the engine builds."""

    life_cycles: tuple[str, ...]  # "full", "swa<window>" (+ "s<sinks>")
    slot_bytes: int
    planned_pages: int
    engine_pages: int = 0

    @property
    def short(self) -> int:
        """Pages kvgen plans that the engine does not build (0 when it builds enough)."""
        return max(0, self.planned_pages - self.engine_pages)


def engine_budget_plan(
    sizing: types.ModuleType,
    model: str,
    budget: int,
    *,
    max_batch_size: int,
    revision: str = DEFAULT_REVISION,
    avg_seq_len: int | None = None,
    pool_ratio: Mapping[str, Sequence[float]] | None = None,
    **common: Any,
) -> tuple[dict[str, int], dict[str, int], dict[str, tuple[int | None, list[EnginePool]]]]:
    """A KV budget as TensorRT-LLM V2 is handed it: the shares of the engine's split between
    the managers at ``revision`` (``kvgen.sizing._trtllm_budget.split_budget``; "early-2026":
    kvgen's slope split of docs/cost-model.md §6, "38198e34": per-request weights, cap and floor,
    with ``avg_seq_len`` as the engine's ``kv_cache_config.avg_seq_len``), the quota each manager
    keeps and what the pools its own split builds from that quota hold. "early-2026": each
    share rounded down to whole grains (the engine rounds a quota up to its grain, so it keeps
    exactly these bytes), pools by :func:`engine_plan_for_quota`; "38198e34": the shares as
    the engine computes them from the budget, pools by :func:`engine_plan_for_split` (its
    split within a manager, from ``avg_seq_len`` or ``pool_ratio``, one weight list per
    manager). ``common``: max_seq_len, max_num_tokens, speculative, tp_size. Returns
    (shares, quotas, plan); ValueError where the split is not modelled (recurrent or cross
    pools, DCP)."""
    managers = sizing.cache_costs(model, max_batch_size=max_batch_size, **common)
    shares = {"target": budget}
    if len(managers) > 1:
        shares = split_budget(sizing, model, budget, max_batch_size=max_batch_size,
                              revision=revision, avg_seq_len=avg_seq_len, **common)  # fmt: skip
    if _revision(revision).per_request_split:  # its own split within each manager
        plan = engine_plan_for_split(sizing, model, shares, max_batch_size=max_batch_size,
                                     avg_seq_len=avg_seq_len, pool_ratio=pool_ratio,
                                     **common)  # fmt: skip
        return shares, dict(shares), plan
    quotas = {name: whole_grains(share) for name, share in shares.items()}
    plan = engine_plan_for_quota(sizing, model, quotas, max_batch_size=max_batch_size, **common)
    return shares, quotas, plan


def pool_ratio_for_quota(
    sizing: types.ModuleType,
    model: str,
    quota: int,
    *,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
) -> list[float] | None:
    """The target's ``kv_cache_config.pool_ratio`` that makes TensorRT-LLM 38198e34 build
    kvgen's own pools from ``quota`` bytes: one weight per life cycle in the engine's order.
    kvgen's pools for T tokens (ceil(T/tpb) full pages, per window B * pages(w, H) + the
    context's pages) are taken at the largest T whose pools, each rounded up to the engine's
    grain, fit the quota rounded up to it; every pool group's weight is its grains over the
    quota's, the grains left over going to the group of full attention (all of them where
    nothing grows). A group's weight is shared by its life cycles in proportion to their
    slot bytes. None where not even B requests' window pages fit (T = 0)."""
    storage = engine_storage(sizing, model, speculative=speculative, max_seq_len=max_seq_len,
                             tp_size=tp_size)  # fmt: skip
    group_of, sizes = pool_groups(storage.slot_sizes)
    plans = sizing.trtllm_plans(
        model, max_batch_size=max_batch_size, max_num_tokens=max_num_tokens,
        max_seq_len=max_seq_len, speculative=speculative, tp_size=tp_size,
    )  # fmt: skip
    plan = next(iter(plans.values()))  # the target's
    if plan is None:
        raise ValueError(
            f"{model}: the engine's pool split is modelled for attention-only managers"
        )
    grain = gpu_alloc_granularity(quota)
    total = -(-quota // grain)
    members = []  # per kvgen group: the engine group and its (fixed, sliding, full) pages
    for _size, cycles, pages, sliding, full in plan.groups:
        engine_group = group_of[storage.names.index(_cycle_name(*cycles[0]))]
        members.append((engine_group, plan.batch * pages, sliding, full))

    def grains(k: int) -> list[int]:
        pages = [0] * len(sizes)
        for pg, fixed, sliding, full in members:
            pages[pg] += fixed + sliding * min(k, plan.context) + full * k
        return [grains_for_slots(n, sizes[pg], grain) for pg, n in enumerate(pages)]

    if sum(grains(1)) > total:
        return None
    lo, hi = 1, 2  # the largest k (pages of full attention) whose pools fit
    while sum(grains(hi)) <= total and (plan.grows or hi <= plan.context):
        lo, hi = hi, 2 * hi
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if sum(grains(mid)) <= total else (lo, mid)
    per_group = grains(lo)
    grows = [pg for pg, _f, _s, full in members if full] or list(range(len(sizes)))
    per_group[grows[0]] += total - sum(per_group)
    bytes_of = [sum(s) for s in storage.slot_sizes]
    ratio = []
    for lc, pg in enumerate(group_of):
        share = sum(b for b, g in zip(bytes_of, group_of, strict=True) if g == pg)
        ratio.append(per_group[pg] / total * (bytes_of[lc] / share))
    return ratio


def engine_pool_plan(
    sizing: types.ModuleType,
    model: str,
    *,
    requests: int,
    seq_len: int,
    max_num_tokens: int,
    speculative: str = "none",
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
) -> dict[str, list[EnginePool]]:
    """Per cache manager, the engine's pool groups with the pages kvgen plans to serve
    ``requests`` requests to ``seq_len`` tokens (``quota_for_requests`` under
    ``"trtllm-v2"``): R * ceil((S - 1 + H)/tpb) full pages, and per sliding life cycle
    R * pages(w, H) + ceil(min(T, N)/tpb) (docs/cost-model.md §3, §4)."""
    plans = _attention_plans(sizing, model, speculative, requests, max_num_tokens, seq_len,
                             tp_size, pp_size, pp_rank)  # fmt: skip
    profile = sizing.TABLES.profiles[speculative]
    tpb = sizing.TOKENS_PER_BLOCK
    pages = -(-(seq_len - 1 + profile.extra + profile.step) // tpb)
    out = {}
    for manager, plan in plans.items():
        tokens = requests * pages * tpb if plan.grows else 0
        for _size, cycles, _pages, _sliding, _full in plan.groups:
            for window, _sinks, chunk in cycles:
                if not window:
                    continue  # the full life cycle: its pages grow with T alone
                offset = chunk - 1 - math.gcd(chunk, tpb) if chunk else window - 2
                least = swa_context_tokens(offset, profile.extra, profile.extra + profile.step,
                                           requests, max_num_tokens, 0, tpb)  # fmt: skip
                tokens = max(tokens, least)
        out[manager] = _pools_at(tpb, plan, tokens)
    return out


def engine_plan_for_quota(
    sizing: types.ModuleType,
    model: str,
    quota_bytes: Mapping[str, int],
    *,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
) -> dict[str, tuple[int | None, list[EnginePool]]]:
    """Per cache manager, what the engine's pools for ``quota_bytes[manager]`` hold: the
    largest T (tokens of full-attention history; None when no full pool bounds it) whose
    "trtllm-v2" pools fit the slots the engine's split builds in every pool group, and those
    pools (``planned_pages`` at T, ``engine_pages`` built): the pool groups and the split
    ``engine_capacity(engine="trtllm-v2")`` applies (the sizing module's ``trtllm_plans`` and
    ``trtllm_held``), named as kvgen's life cycles."""
    plans = sizing.trtllm_plans(
        model, max_batch_size=max_batch_size, max_num_tokens=max_num_tokens,
        max_seq_len=max_seq_len, speculative=speculative, tp_size=tp_size, pp_size=pp_size,
        pp_rank=pp_rank,
    )  # fmt: skip
    out: dict[str, tuple[int | None, list[EnginePool]]] = {}
    for manager, plan in plans.items():
        if manager not in quota_bytes:
            continue
        if plan is None:
            raise ValueError(_UNSPLIT.format(model=model, manager=manager))
        tokens, slots, k = sizing.trtllm_held(plan, quota_bytes[manager])
        out[manager] = (tokens, [
            EnginePool(tuple(_cycle_name(*c) for c in cycles), size,
                       plan.batch * pages + sliding * min(k, plan.context) + full * k, built)
            for (size, cycles, pages, sliding, full), built in zip(plan.groups, slots, strict=True)
        ])  # fmt: skip
    return out


_UNSPLIT = (
    "{model} {manager}: the engine's pool split is modelled for attention-only managers "
    "(no recurrent, cross or DCP pools)"
)


def _cycle_name(window: int, sinks: int, chunk: int) -> str:
    return "full" if not window else _name(window, sinks, chunk)


def _attention_plans(sizing: types.ModuleType, model: str, *args: Any) -> dict[str, TrtllmPlan]:
    """Each manager's TensorRT-LLM V2 pool groups (arguments: speculative, batch, N, S, tp,
    pp, pp_rank); ValueError for a manager with pools outside the split model."""
    speculative, batch, chunk, seq, tp, pp, rank = args
    plans: dict[str, TrtllmPlan | None] = sizing.trtllm_plans(
        model, max_batch_size=batch, max_num_tokens=chunk, max_seq_len=seq,
        speculative=speculative, tp_size=tp, pp_size=pp, pp_rank=rank,
    )  # fmt: skip
    split: dict[str, TrtllmPlan] = {}
    for manager, plan in plans.items():
        if plan is None:
            raise ValueError(_UNSPLIT.format(model=model, manager=manager))
        split[manager] = plan
    return split


def _pools_at(tpb: int, plan: TrtllmPlan, tokens: int) -> list[EnginePool]:
    """kvgen's "trtllm-v2" pools of one manager for T = ``tokens`` as the engine's pool
    groups: ceil(T/tpb) full pages, per sliding life cycle B * pages(w, H) +
    ceil(min(T, N)/tpb); the engine keys groups by slot size (kvgen's cycles hold one buffer
    size each), a chunked life cycle keeps a pool of its own, as the shim builds it."""
    k = -(-tokens // tpb)
    context = min(k, plan.context)
    return [
        EnginePool(tuple(_cycle_name(*c) for c in cycles), size,
                   plan.batch * pages + sliding * context + full * k)
        for size, cycles, pages, sliding, full in plan.groups
    ]  # fmt: skip


def engine_pools(
    sizing: types.ModuleType, model: str, quota_bytes: Mapping[str, int], **plan: Unpack[_Served]
) -> dict[str, list[EnginePool]]:
    """The pools the engine builds from ``quota_bytes`` (bytes per cache manager) beside
    kvgen's plan for the serving parameters in ``plan`` (those of
    :func:`engine_pool_plan`): ``engine_pages`` per group, ``short`` where it builds fewer."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():
        groups = [PoolGroup((p.slot_bytes,), len(p.life_cycles)) for p in pools]
        built = slots_for_quota(quota_bytes[manager], groups)
        out[manager] = [
            EnginePool(p.life_cycles, p.slot_bytes, p.planned_pages, b)
            for p, b in zip(pools, built, strict=True)
        ]
    return out


def engine_quota_for_requests(
    sizing: types.ModuleType, model: str, **plan: Unpack[_Served]
) -> dict[str, int]:
    """Per cache manager, the least GPU quota from which the early-2026 engine builds at
    least kvgen's pages in every pool group, so that every request runs to ``seq_len`` in
    the engine. Keywords: those of :func:`engine_pool_plan`. One pool group: kvgen's pool
    bytes (the engine rounds them up to its grain and gives the group all of it); several:
    the least multiple of the grain under the proportional split, far more than kvgen's
    pools for a sliding-window model, whose window pools the split overfeeds. The same
    answer as ``quota_for_requests(..., semantics="trtllm-v2")``, derived apart from it."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():
        if len(pools) == 1:
            out[manager] = pools[0].slot_bytes * pools[0].planned_pages
            continue
        groups = [PoolGroup((p.slot_bytes,), len(p.life_cycles)) for p in pools]
        out[manager] = least_quota(groups, [p.planned_pages for p in pools])
    return out


def engine_pool_ratio(
    sizing: types.ModuleType, model: str, **plan: Unpack[_Served]
) -> dict[str, list[float]]:
    """Per cache manager, kvgen's bytes per pool group over its quota, in the engine's group
    order: the value for ``KVCacheManagerConfig.initial_pool_ratio`` of later revisions
    (read, not run: ``_config.py`` at 00043967, "one positive, normalized hot-tier byte-quota
    weight per layer group", ahead of ``typical_step``; ``constraints`` stay floors). The
    early-2026 revision the golden runs has no such option: hand it
    ``quota_for_requests`` (``"trtllm-v2"``) instead."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():
        sizes = [p.slot_bytes * p.planned_pages for p in pools]
        out[manager] = [size / sum(sizes) for size in sizes]
    return out


def _name(window: int, sinks: int, chunk: int) -> str:
    if chunk:
        return f"chunk{chunk}"
    return f"swa{window}" + (f"s{sinks}" if sinks else "")


class EngineStorage(NamedTuple):
    """One manager as 38198e34's storage sees it: its life cycles in the order the engine
    registers them (first appearance over its layers), each one's kvgen name and the slot
    bytes of each of its pools (K and V buffers of equal size coalesced, one pool per size)."""

    life_cycles: tuple[TrtllmLifeCycle, ...]
    names: tuple[str, ...]
    slot_sizes: tuple[tuple[int, ...], ...]


# engine_storage's answers by (the family's tables' identity, model, manager, profile,
# max_seq_len, tp); each entry keeps the tables, so a reused identity never matches. Bounded.
_STORAGE: dict[tuple[Any, ...], tuple[Any, EngineStorage]] = {}


def engine_storage(
    sizing: types.ModuleType,
    model: str,
    manager: str = "target",
    *,
    speculative: str = "none",
    max_seq_len: int,
    tp_size: int = 1,
) -> EngineStorage:
    """:func:`_engine_storage`, remembered (a function of the family's tables and these)."""
    tables = sizing.TABLES
    key = (id(tables), model, manager, speculative, max_seq_len, tp_size)
    hit = _STORAGE.get(key)
    if hit is not None and hit[0] is tables:
        return hit[1]
    storage = _engine_storage(sizing, model, manager, speculative=speculative,
                              max_seq_len=max_seq_len, tp_size=tp_size)  # fmt: skip
    if len(_STORAGE) >= 4096:
        _STORAGE.clear()
    _STORAGE[key] = (tables, storage)
    return storage


def _engine_storage(
    sizing: types.ModuleType,
    model: str,
    manager: str = "target",
    *,
    speculative: str = "none",
    max_seq_len: int,
    tp_size: int = 1,
) -> EngineStorage:
    """The life cycles and pools of one manager at TensorRT-LLM 38198e34 (``KVCacheManagerV2
    ._build_base_config`` and the C++ ``createStorageConfig``): a layer's window is its kind's
    (a window of at least max_seq_len is full attention), its K and V buffers
    ``ceil(kv_heads/tp) x head_dim x dtype x tpb`` bytes each. ValueError for what this
    revision's pool split is not modelled for: recurrent, cross, chunked or KV-sharing
    layers, scaled or latent layouts, sink tokens."""
    tpb = sizing.TOKENS_PER_BLOCK
    entry, profile = sizing.TABLES.models[model], sizing.TABLES.profiles[speculative]
    stacks = [entry.layers]
    if manager == "target":
        extra = entry.extra_layers.get(speculative)
        stacks += [extra] if extra is not None else []
    elif manager == "draft" and profile.draft is not None:
        stacks = [profile.draft]
    else:
        raise ValueError(f"{model}: no {manager} manager for speculative {speculative!r}")
    order: dict[tuple[int | None, int], dict[int, int]] = {}  # cycle -> buffer size -> count
    for stack in stacks:
        # Each kind once, with its layer count, in order of its first layer (the pattern
        # repeats over the layers): what a walk over every layer registers, at the cost of
        # the pattern's length rather than the layer count's.
        rounds, rest = divmod(stack.layer_count, len(stack.pattern))
        layers: dict[str, int] = {}
        for i, name in enumerate(stack.pattern):
            if rounds or i < rest:
                layers[name] = layers.get(name, 0) + rounds + (i < rest)
        for name, count in layers.items():
            kind = stack.kinds[name]
            if kind.attention == "none":
                continue
            # The kind's attention first: a recurrent kind's row is not (heads, dims,
            # element, fixed), and unpacking it would raise a ValueError of its own.
            plain = kind.attention in ("full", "sliding") and kind.reads is None
            if plain and not kind.sink_tokens:
                kv_heads, dims, element, fixed = kind_row(kind)
                plain = not fixed and element > 0 and kv_heads > 0
            if not plain or kind.sink_tokens:
                raise ValueError(
                    f"{model} {manager}: the pool split of revision 38198e34 is modelled for "
                    "full and sliding attention of plain K/V heads (no recurrent, cross, "
                    "chunked or shared layers, scaled or latent layouts, or sink tokens)"
                )
            window = kind.window if kind.attention == "sliding" else None
            key = (None if window is None or window >= max_seq_len else window, 0)
            heads = -(-kv_heads // tp_size)
            sizes = order.setdefault(key, {})
            for dim in dims:  # K, then V
                size = heads * dim * element * tpb
                sizes[size] = sizes.get(size, 0) + count
    cycles = tuple(TrtllmLifeCycle(window, sinks) for window, sinks in order)
    pools = tuple(
        tuple(sorted((size * n for size, n in sizes.items()), reverse=True))
        for sizes in order.values()
    )
    names = tuple("full" if lc.window is None else _name(lc.window, 0, 0) for lc in cycles)
    return EngineStorage(cycles, names, pools)


def engine_storage_split(
    sizing: types.ModuleType,
    model: str,
    quota_bytes: Mapping[str, int],
    *,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
    avg_seq_len: int | None = None,
    pool_ratio: Mapping[str, Sequence[float]] | None = None,
    max_util_for_resume: float = 0.95,
) -> dict[str, tuple[EngineStorage, PoolSplit]]:
    """Per manager in ``quota_bytes``, its storage and the slots 38198e34 builds from its
    quota (``kvgen.sizing._trtllm_pool_split.split_quota``) with the ``typical_step`` and
    ``constraints`` its ``_build_base_config`` derives from ``avg_seq_len`` (only without a
    ``pool_ratio``; ``kvgen.sizing._trtllm_budget.pool_split_inputs``) and ``pool_ratio[manager]``
    as ``initial_pool_ratio`` (one weight per life cycle, in the engine's order)."""
    profile = sizing.TABLES.profiles[speculative]
    out = {}
    for manager, quota in quota_bytes.items():
        storage = engine_storage(sizing, model, manager, speculative=speculative,
                                 max_seq_len=max_seq_len, tp_size=tp_size)  # fmt: skip
        ratio = None if pool_ratio is None else tuple(pool_ratio[manager])
        inputs = pool_split_inputs(
            max_batch_size=max_batch_size, max_num_tokens=max_num_tokens,
            max_seq_len=max_seq_len, extra_tokens=profile.extra,
            max_draft_len=profile.draft_len, avg_seq_len=avg_seq_len, pool_ratio=ratio,
        )  # fmt: skip
        split = split_quota(
            quota, storage.life_cycles, storage.slot_sizes, sizing.TOKENS_PER_BLOCK,
            typical_step=inputs["typical_step"], constraints=inputs["constraints"],
            initial_pool_ratio=inputs["initial_pool_ratio"],
            max_util_for_resume=max_util_for_resume,
        )  # fmt: skip
        out[manager] = (storage, split)
    return out


def engine_plan_for_split(
    sizing: types.ModuleType,
    model: str,
    quota_bytes: Mapping[str, int],
    *,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
    avg_seq_len: int | None = None,
    pool_ratio: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, tuple[int | None, list[EnginePool]]]:
    """:func:`engine_plan_for_quota` at revision 38198e34: per manager, the largest T whose
    "trtllm-v2" pools fit the slots that revision's own split builds from the manager's quota
    (:func:`engine_storage_split`), and those pools. ValueError where kvgen's pool groups and
    the engine's do not pair one to one."""
    plans = sizing.trtllm_plans(
        model, max_batch_size=max_batch_size, max_num_tokens=max_num_tokens,
        max_seq_len=max_seq_len, speculative=speculative, tp_size=tp_size,
    )  # fmt: skip
    splits = engine_storage_split(
        sizing, model, quota_bytes, max_batch_size=max_batch_size,
        max_num_tokens=max_num_tokens, max_seq_len=max_seq_len, speculative=speculative,
        tp_size=tp_size, avg_seq_len=avg_seq_len, pool_ratio=pool_ratio,
    )  # fmt: skip
    out: dict[str, tuple[int | None, list[EnginePool]]] = {}
    for manager, plan in plans.items():
        if manager not in splits:
            continue
        storage, split = splits[manager]
        if plan is None:
            raise ValueError(_UNSPLIT.format(model=model, manager=manager))
        slots = []
        for _size, cycles, *_counts in plan.groups:
            names = {_cycle_name(*c) for c in cycles}
            groups = {split.group_of[storage.names.index(n)] for n in names}
            members = {n for n, g in zip(storage.names, split.group_of, strict=True) if g in groups}
            if len(groups) != 1 or members != names:
                raise ValueError(
                    f"{model} {manager}: kvgen's pool groups and TensorRT-LLM 38198e34's "
                    "differ (life cycles of equal slot bytes but different pools)"
                )
            slots.append(split.slots[groups.pop()])
        tokens, built, k = sizing.trtllm_held_in(plan, tuple(slots))
        out[manager] = (tokens, [
            EnginePool(tuple(_cycle_name(*c) for c in cycles), size,
                       plan.batch * pages + sliding * min(k, plan.context) + full * k, count)
            for (size, cycles, pages, sliding, full), count in zip(plan.groups, built, strict=True)
        ])  # fmt: skip
    return out


class TrtllmEmit(NamedTuple):
    """What ``plan --emit trtllm`` writes for one revision and what the engine then holds:
    the quota (``max_gpu_total_bytes``), the quota each manager keeps, the target's
    ``pool_ratio`` (None: not written), the target's tokens of full-attention history (None:
    nothing grows with them), the pools per manager and why a setting is not written."""

    quota: int
    quotas: dict[str, int]
    pool_ratio: list[float] | None
    tokens: int | None
    pools: dict[str, list[EnginePool]]
    notes: tuple[str, ...] = ()
    # per manager, its tokens of full-attention history (None: nothing grows with them)
    held: dict[str, int | None] | None = None


def trtllm_emit(
    sizing: types.ModuleType,
    model: str,
    budget: int,
    *,
    max_batch_size: int,
    revision: str,
    **common: Any,
) -> TrtllmEmit:
    """The settings that make TensorRT-LLM at ``revision`` build kvgen's pools from
    ``budget`` bytes, and the capacity it then builds (docs/deploy.md). "early-2026": the
    budget as each manager's share in whole grains (:func:`engine_budget_plan`); that
    revision takes no ratio. "38198e34": the budget in whole grains of the engine (it rounds
    a quota up to its grain), and for a target alone the ``pool_ratio`` of
    :func:`pool_ratio_for_quota`, from which its split builds kvgen's pools; with a separate
    draft pool no ratio (the engine hands the draft manager the target's ``pool_ratio``), the
    engine's own split of the budget and of each share. ``avg_seq_len`` is not written: with
    a ratio the split does not read it. ValueError where the split is not modelled."""
    found = _revision(revision)
    if not found.per_request_split:  # no pool_ratio at this revision
        _shares, quotas, plan = engine_budget_plan(
            sizing, model, budget, max_batch_size=max_batch_size, revision=revision, **common
        )
        pools = {name: p for name, (_t, p) in plan.items()}
        held = {name: t for name, (t, _p) in plan.items()}
        return TrtllmEmit(sum(quotas.values()), quotas, None, plan["target"][0], pools, (), held)
    quota = budget - budget % gpu_alloc_granularity(budget) or budget
    notes: tuple[str, ...] = ()
    ratio = None
    managers = sizing.cache_costs(model, max_batch_size=max_batch_size, **common)
    if len(managers) > 1:
        notes = (
            (
                f"pool_ratio is not written: {found.named} hands the separate draft "
                "manager the target's pool_ratio; each manager's pools are the engine's own split"
            ),
        )
    else:
        keys = ("max_num_tokens", "max_seq_len", "speculative", "tp_size")
        ratio = pool_ratio_for_quota(sizing, model, quota, max_batch_size=max_batch_size,
                                     **{k: common[k] for k in keys})  # fmt: skip
        if ratio is None:
            notes = (("pool_ratio is not written: the quota holds fewer than max_batch_size "
                      "requests' window pages"),)  # fmt: skip
    _shares, quotas, plan = engine_budget_plan(
        sizing, model, quota, max_batch_size=max_batch_size, revision=revision,
        pool_ratio=None if ratio is None else {"target": ratio}, **common,
    )  # fmt: skip
    pools = {name: p for name, (_t, p) in plan.items()}
    held = {name: t for name, (t, _p) in plan.items()}
    return TrtllmEmit(quota, quotas, ratio, plan["target"][0], pools, notes, held)


# ---- 38198e34's answer for engine_capacity, its budget-free part built once ----------------
#
# ``trtllm_emit`` derives everything from the sizing module on every call; engine_capacity
# asks the same question for many budgets and batch sizes. What does not depend on them (each
# manager's storage, pool groups, floors, the pairing of kvgen's pool groups with the engine's,
# the per-request spends of the budget split) is a ``SplitFrame``, built once per model,
# profile, max_seq_len and tp by the very functions ``trtllm_emit`` calls; ``split_slots``
# then does only the arithmetic that depends on the budget and the batch, operation for
# operation that of ``trtllm_emit`` (``tests/generated/test_trtllm_split_frame.py`` holds the
# two to the same answers).


class _ManagerFrame(NamedTuple):
    """One manager's budget-free part of 38198e34's split: kvgen's pool groups (the plan's
    ``groups``, compared by identity), the engine group each one is (paired one to one), the
    engine groups' slot sizes and least slots, each life cycle's engine group and its share
    of the group's bytes (what ``pool_ratio_for_quota`` weighs), and per grain the fallback
    group ratio and the least slots' grains (filled on first use: five grains at most)."""

    groups: tuple[Any, ...]
    engine_group: tuple[int, ...]
    sizes: tuple[tuple[int, ...], ...]
    least: tuple[int, ...]
    group_of: tuple[int, ...]
    byte_share: tuple[float, ...]
    life_cycles: tuple[TrtllmLifeCycle, ...]
    per_grain: dict[int, tuple[list[float], int]]
    one_pool: tuple[int, ...] | None  # each group's one slot size, where each has one pool
    # Per engine group, kvgen's plan in it: window pages one request holds, sliding and full
    # life cycles; the first group holding full attention (-1: none), and whether the split
    # depends on the batch size: only where a group holds window pages and there are several
    # groups (one group takes every grain: its pool_ratio is each life cycle's byte share
    # whatever k, or none where even k = 1 does not fit, and either way its group ratio is 1).
    pages: tuple[int, ...]
    sliding: tuple[int, ...]
    full: tuple[int, ...]
    first_full: int
    by_batch: bool
    # The target's slots by (budget, batch size if by_batch else 0, context pages), and the
    # fallback split's (no pool ratio fits), the least batch with none last, by (budget, -1,
    # -1). Bounded.
    slots: dict[tuple[int, int, int], tuple[int, ...]]


class SplitFrame(NamedTuple):
    """The budget-free part of 38198e34's split for one model, profile, max_seq_len and tp:
    the target's manager frame, the draft's (None without a separate draft pool) and, with
    one, each manager's per-request spend (``ManagerCost.bytes_per_request``)."""

    target: _ManagerFrame
    draft: _ManagerFrame | None
    spends: tuple[int | None, int | None]


def _manager_frame(
    sizing: types.ModuleType, model: str, manager: str, plan: TrtllmPlan, **given: Any
) -> _ManagerFrame:
    """``_ManagerFrame`` of one manager (``given``: speculative, max_seq_len, tp_size);
    ValueError where ``trtllm_emit`` raises for its storage or pairing."""
    storage = engine_storage(sizing, model, manager, **given)
    group_of, sizes = pool_groups(storage.slot_sizes)
    if any(lc.ssm for lc in storage.life_cycles):  # never built by engine_storage
        raise TypeError("a recurrent life cycle is outside the frame")
    least = [0] * len(sizes)
    for floor, pg in zip(life_cycle_floors(storage.life_cycles, sizing.TOKENS_PER_BLOCK),
                         group_of, strict=True):  # fmt: skip
        least[pg] += floor
    engine_group = []
    for _size, cycles, *_counts in plan.groups:  # engine_plan_for_split's pairing
        names = {_cycle_name(*c) for c in cycles}
        groups = {group_of[storage.names.index(n)] for n in names}
        members = {n for n, g in zip(storage.names, group_of, strict=True) if g in groups}
        if len(groups) != 1 or members != names:
            raise ValueError(f"{model} {manager}: kvgen's pool groups and the engine's differ")
        engine_group.append(groups.pop())
    bytes_of = [sum(s) for s in storage.slot_sizes]
    share = [0] * len(sizes)
    for b, pg in zip(bytes_of, group_of, strict=True):
        share[pg] += b
    pages, sliding, full = [0] * len(sizes), [0] * len(sizes), [0] * len(sizes)
    first_full = -1
    for (_size, _cycles, held, slides, fulls), pg in zip(plan.groups, engine_group, strict=True):
        pages[pg] += held
        sliding[pg] += slides
        full[pg] += fulls
        if fulls and first_full < 0:
            first_full = pg
    share_of = tuple(b / share[pg] for b, pg in zip(bytes_of, group_of, strict=True))
    return _ManagerFrame(
        plan.groups, tuple(engine_group), sizes, tuple(least), group_of, share_of,
        storage.life_cycles, {},
        tuple(g[0] for g in sizes) if all(len(g) == 1 for g in sizes) else None,
        tuple(pages), tuple(sliding), tuple(full), first_full,
        any(pages) and (len(sizes) > 1 or not _accepted(list(share_of))), {},
    )  # fmt: skip


def _accepted(ratio: list[float]) -> bool:
    """Whether the engine takes ``ratio`` as ``initial_pool_ratio`` (``checked_ratio``)."""
    try:
        checked_ratio(ratio, len(ratio))
    except ValueError:
        return False
    return True


def split_frame(
    sizing: types.ModuleType,
    model: str,
    plans: Sequence[TrtllmPlan | None],
    managers: Sequence[str],
    *,
    revision: str,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
) -> SplitFrame | None:
    """The ``SplitFrame`` of these options (one call's batch and chunk, on which it does not
    depend) for the managers and plans of ``trtllm_plans``, or None where 38198e34's split
    is not modelled for them (``trtllm_emit`` raises ValueError: the early answer stands)."""
    given: dict[str, Any] = {
        "speculative": speculative, "max_seq_len": max_seq_len, "tp_size": tp_size
    }  # fmt: skip
    if tuple(managers) not in (("target",), ("target", "draft")) or None in plans:
        return None
    try:
        frames = [_manager_frame(sizing, model, m, p, **given)
                  for m, p in zip(managers, plans, strict=True) if p is not None]  # fmt: skip
        spends: tuple[int | None, int | None] = (None, None)
        if len(frames) > 1:
            costs = manager_costs(sizing, model, max_batch_size=max_batch_size,
                                  max_num_tokens=max_num_tokens, revision=revision,
                                  **given)  # fmt: skip
            spends = (costs["target"].bytes_per_request, costs["draft"].bytes_per_request)
    except ValueError:
        return None
    return SplitFrame(frames[0], frames[1] if len(frames) > 1 else None, spends)


def _per_grain(frame: _ManagerFrame, grain: int, tpb: int) -> tuple[list[float], int]:
    """The fallback group ratio and the least slots' grains of a manager at ``grain``."""
    known = frame.per_grain.get(grain)
    if known is None:
        lc_ratio = fallback_ratio(frame.life_cycles, frame.group_of, frame.sizes, grain, tpb)
        floor = sum(grains_for_slots(n, s, grain) for n, s in zip(frame.least, frame.sizes,
                                                                   strict=True))  # fmt: skip
        known = frame.per_grain[grain] = (
            group_ratio(lc_ratio, frame.group_of, len(frame.sizes)),
            floor,
        )
    return known


def _grains_at(
    at: list[int], grow: list[int], sizes: tuple[tuple[int, ...], ...], grain: int, k: int
) -> int:
    """Grains of the engine groups' pools at at[g] + grow[g] * k slots each."""
    grains = 0
    for pg, pools in enumerate(sizes):
        n = at[pg] + grow[pg] * k
        for s in pools:
            grains += -(-n * s // grain)
    return grains


def _largest_k(
    at: list[int], grow: list[int], sizes: tuple[tuple[int, ...], ...], grain: int, total: int,
    lo: int, hi: int | None,
) -> int | None:  # fmt: skip
    """The largest k >= ``lo`` (and < ``hi``) whose pools (``_grains_at``) fit ``total``
    grains, k = ``lo`` fitting; None where every k from ``lo`` fits (no pool grows)."""
    moving = [(pg, s) for pg, pools in enumerate(sizes) if grow[pg] for s in pools]
    if not moving:
        return None if hi is None else hi - 1
    if len(moving) == 1:  # ceil((a + c k) s / grain) <= room: (a + c k) s <= room * grain
        pg, s = moving[0]
        room = total
        for other, pools in enumerate(sizes):
            for size in pools:
                if other != pg or size != s or not grow[other]:
                    room -= -(-at[other] * size // grain)
        k = (room * grain // s - at[pg]) // grow[pg]
        return k if hi is None else min(k, hi - 1)
    # Bounds from the bytes alone (each pool rounds up by less than a grain), then bisection.
    flat = [(pg, s) for pg, group in enumerate(sizes) for s in group]
    spread = sum(grow[pg] * s for pg, s in moving)
    fixed_bytes = sum(at[pg] * s for pg, s in flat)
    top = (total * grain - fixed_bytes) // spread + 1  # its bytes alone exceed the grains
    if hi is not None:
        top = min(top, hi)
    low = max(lo, (total * grain - len(flat) * grain - fixed_bytes) // spread)
    while low + 1 < top:
        mid = (low + top) // 2
        if _grains_at(at, grow, sizes, grain, mid) <= total:
            low = mid
        else:
            top = mid
    return low


def _target_ratio(
    frame: _ManagerFrame, batch: int, context: int, grows: bool, grain: int, total: int
) -> list[float] | None:
    """``pool_ratio_for_quota`` on a frame (its plan at ``batch`` requests, n = ``context``
    pages of a chunk): each engine group's pages at k pages of full attention are
    B * P + S * min(k, n) + U * k; the largest k whose pools fit ``total`` grains (closed
    form where one pool grows, else bisection between bounds), as that function's doubling
    and bisection find it (where no full pool grows, k stops below the first power of two
    above n); None where not even k = 1 fits."""
    if frame.one_pool is not None:
        return _one_pool_ratio(frame, frame.one_pool, batch, context, grows, grain, total)
    sizes, sliding, full = frame.sizes, frame.sliding, frame.full
    count = len(sizes)
    fixed = list(map(batch.__mul__, frame.pages))  # no comprehension's frame
    early = [sliding[pg] + full[pg] for pg in range(count)]  # growth per k while k <= n
    if _grains_at(fixed, early, sizes, grain, 1) > total:
        return None
    if context >= 2 and _grains_at(fixed, early, sizes, grain, context) > total:
        best = _largest_k(fixed, early, sizes, grain, total, 1, context)
    else:  # past n: only full attention grows
        after = [fixed[pg] + sliding[pg] * context for pg in range(count)]
        best = _largest_k(after, list(full), sizes, grain, total, max(context, 1), None)
    if not grows:  # the doubling stops at the first power of two above n
        cap = max(2, 1 << context.bit_length()) - 1
        best = cap if best is None or best > cap else best
    assert best is not None  # a growing plan has a full pool
    k = best
    m = min(context, k)
    per_group = [0] * count
    spent = 0
    for pg, pools in enumerate(sizes):
        n = fixed[pg] + sliding[pg] * m + full[pg] * k
        for s in pools:
            per_group[pg] += -(-n * s // grain)
        spent += per_group[pg]
    per_group[max(frame.first_full, 0)] += total - spent
    ratio = []
    for pg, share in zip(frame.group_of, frame.byte_share, strict=True):
        ratio.append(per_group[pg] / total * share)
    return ratio


def _one_pool_ratio(
    frame: _ManagerFrame, sizes: tuple[int, ...], batch: int, context: int, grows: bool,
    grain: int, total: int,
) -> list[float] | None:  # fmt: skip
    """``_target_ratio`` where each engine group holds one pool (slot bytes ``sizes[g]``):
    group g's grains at k are ceil(pages_g(k) * s_g / grain), so where one group grows the
    largest k is (room * grain // s - a) // c; the same answer, fewer steps."""
    pages, sliding, full = frame.pages, frame.sliding, frame.full
    count = len(sizes)
    fixed = list(map(batch.__mul__, pages))  # map, not a comprehension: no frame
    at_one = 0  # grains at k = 1 (min(1, n) = 1: n >= 1)
    for pg in range(count):
        at_one += -(-(fixed[pg] + sliding[pg] + full[pg]) * sizes[pg] // grain)
    if at_one > total:
        return None
    best: int | None
    at_context = 0
    if context >= 2:
        for pg in range(count):
            n = fixed[pg] + (sliding[pg] + full[pg]) * context
            at_context += -(-n * sizes[pg] // grain)
    if context >= 2 and at_context > total:  # k < n: every cycle grows with k
        growth = [sliding[pg] + full[pg] for pg in range(count)]
        best = _largest_k(fixed, growth, frame.sizes, grain, total, 1, context)
    else:  # past n: only full attention grows
        if count - full.count(0) == 1:  # one group grows: the one of the most full cycles
            pg = max(range(count), key=full.__getitem__)
            room = total
            for other in range(count):
                if other != pg:
                    room -= -(-(fixed[other] + sliding[other] * context) * sizes[other] // grain)
            a = fixed[pg] + sliding[pg] * context
            best = (room * grain // sizes[pg] - a) // full[pg]
        else:
            after = [fixed[pg] + sliding[pg] * context for pg in range(count)]
            best = _largest_k(after, list(full), frame.sizes, grain, total, max(context, 1), None)
    if not grows:  # the doubling stops at the first power of two above n
        cap = max(2, 1 << context.bit_length()) - 1
        best = cap if best is None or best > cap else best
    assert best is not None  # a growing plan has a full pool
    k = best
    m = min(context, k)
    per_group = [0] * count
    spent = 0
    for pg in range(count):
        spent += (grains := -(-(fixed[pg] + sliding[pg] * m + full[pg] * k) * sizes[pg] // grain))
        per_group[pg] = grains
    per_group[max(frame.first_full, 0)] += total - spent
    ratio = []
    for pg, share in zip(frame.group_of, frame.byte_share, strict=True):
        ratio.append(per_group[pg] / total * share)
    return ratio


def _manager_slots(
    frame: _ManagerFrame, quota: int, grain: int, tpb: int, ratio: list[float] | None
) -> tuple[int, ...]:
    """``split_quota``'s slots of a manager for ``quota`` (``grain``: its grain), in its
    plan's group order (ValueError where the engine refuses the ratio or the quota)."""
    fallback, floor = _per_grain(frame, grain, tpb)
    if ratio is None:
        group = fallback
    elif len(frame.sizes) == 1:  # one group: float32(v / v) of its positive sum v is 1.0
        checked_ratio(ratio, len(frame.group_of))  # or the engine's refusal
        group = [1.0]
    else:
        group = group_ratio(checked_ratio(ratio, len(frame.group_of)), frame.group_of,
                            len(frame.sizes))  # fmt: skip
    used = max(floor * grain, -(-quota // grain) * grain)
    if frame.one_pool is not None:
        slots = one_pool_slot_counts(used, frame.one_pool, group, grain, frame.least)
    else:
        slots = ratio_to_slot_count_list(used, frame.sizes, group, grain, frame.least)
    return tuple(map(slots.__getitem__, frame.engine_group))


@lru_cache(maxsize=4096)  # a function of the budget alone
def _quota(budget: int) -> tuple[int, int]:
    """The grain of ``budget`` and its quota: rounding down to a grain (a divisor of 1 GiB)
    keeps the whole GiB the grain is chosen by, so the quota's grain is the budget's."""
    grain = gpu_alloc_granularity(budget)
    return grain, budget - budget % grain or budget


def split_slots(
    frame: SplitFrame,
    plans: Sequence[TrtllmPlan | None],  # each manager's, the target's first (never None)
    terms: Sequence[Any],
    budget: int,
    tpb: int,
) -> tuple[int, ...] | None:
    """The slots, per group of the target's plan, that 38198e34 builds with the settings
    ``trtllm_emit`` writes for ``budget`` (``terms``: each manager's terms at the call's
    batch, as ``manager_terms`` gives them); None where ``trtllm_emit`` raises ValueError
    (the early answer)."""
    plan = plans[0]
    assert plan is not None  # the caller answers early where a plan is None
    try:
        if frame.draft is None:
            target = frame.target
            key = (budget, plan.batch if target.by_batch else 0, plan.context)
            slots = target.slots.get(key)
            if slots is None:
                # No ratio (not even k = 1 fits, so for no larger batch either: the grains at
                # k = 1 grow with it): the fallback split, a function of the budget alone, kept
                # with the least batch seen to have no ratio.
                fallback = target.slots.get((budget, -1, -1))
                if fallback is not None and plan.batch >= fallback[-1]:
                    slots = fallback[:-1]
                else:
                    grain, quota = _quota(budget)
                    total = -(-quota // grain)
                    ratio = _target_ratio(target, plan.batch, plan.context, plan.grows, grain,
                                          total)  # fmt: skip
                    if ratio is None and fallback is not None:
                        slots = fallback[:-1]
                    else:
                        slots = _manager_slots(target, quota, grain, tpb, ratio)
                    if ratio is None:
                        target.slots[budget, -1, -1] = (*slots, plan.batch)
                if len(target.slots) >= 256:
                    target.slots.clear()
                target.slots[key] = slots
            return slots
        grain, quota = _quota(budget)
        target_spend, draft_spend = frame.spends
        shares = draft_budget_shares(
            quota, ManagerCost(terms[0].slope, terms[0].intercept, target_spend),
            ManagerCost(terms[1].slope, terms[1].intercept, draft_spend), plan.batch,
        )  # fmt: skip
        share, draft = shares["target"], shares["draft"]
        slots = _manager_slots(frame.target, share, gpu_alloc_granularity(share), tpb, None)
        # the draft's split, for its refusal alone
        _manager_slots(frame.draft, draft, gpu_alloc_granularity(draft), tpb, None)
    except ValueError:
        return None
    return slots
