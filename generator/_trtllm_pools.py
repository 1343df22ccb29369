"""kvgen's serving plan carried into TensorRT-LLM's KV cache manager V2 (static side, stdlib).

The engine (the early-2026 revision ``bench/engines/trtllm_source.py`` pins) is given one byte
quota per cache manager and builds its own pools from it: it merges life cycles of equal slot
size into pool groups and splits the quota in proportion to slot bytes x life cycles
(:mod:`kvgen.trtllm_split`), so a sliding-window model gets about as many full pages as
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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kvgen.sizing_quota import swa_context_tokens
from kvgen.trtllm_split import PoolGroup, least_quota, slots_for_quota, whole_grains

__all__ = [
    "EnginePool",
    "engine_budget_plan",
    "engine_plan_for_quota",
    "engine_pool_plan",
    "engine_pool_ratio",
    "engine_pools",
    "engine_quota_for_requests",
]


@dataclass(frozen=True)
class EnginePool:
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
    sizing: types.ModuleType, model: str, budget: int, *, max_batch_size: int, **common: Any
) -> tuple[dict[str, int], dict[str, int], dict[str, tuple[int | None, list[EnginePool]]]]:
    """A KV budget as TensorRT-LLM V2 is handed it: the shares of kvgen's split between the
    managers (docs/cost-model.md §6), each rounded down to whole grains of the engine (which
    rounds a quota up to its grain, so it keeps exactly these bytes), and what the pools its
    own split builds from them hold (:func:`engine_plan_for_quota`). ``common``: max_seq_len,
    max_num_tokens, speculative, tp_size. Returns (shares, quotas, plan); ValueError where
    the split is not modelled (recurrent or cross pools, DCP)."""
    managers = sizing.cache_costs(model, max_batch_size=max_batch_size, **common)
    shares = {"target": budget}
    if len(managers) > 1:
        shares = sizing.split_budget(model, budget, max_batch_size=max_batch_size, **common)
    quotas = {name: whole_grains(share) for name, share in shares.items()}
    plan = engine_plan_for_quota(sizing, model, quotas, max_batch_size=max_batch_size, **common)
    return shares, quotas, plan


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


def _attention_plans(sizing: types.ModuleType, model: str, *args: Any) -> dict[str, Any]:
    """Each manager's TensorRT-LLM V2 pool groups (arguments: speculative, batch, N, S, tp,
    pp, pp_rank); ValueError for a manager with pools outside the split model."""
    speculative, batch, chunk, seq, tp, pp, rank = args
    plans = sizing.trtllm_plans(
        model, max_batch_size=batch, max_num_tokens=chunk, max_seq_len=seq,
        speculative=speculative, tp_size=tp, pp_size=pp, pp_rank=rank,
    )  # fmt: skip
    for manager, plan in plans.items():
        if plan is None:
            raise ValueError(_UNSPLIT.format(model=model, manager=manager))
    return plans


def _pools_at(tpb: int, plan: Any, tokens: int) -> list[EnginePool]:
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
    sizing: types.ModuleType, model: str, quota_bytes: Mapping[str, int], **plan: int | str
) -> dict[str, list[EnginePool]]:
    """The pools the engine builds from ``quota_bytes`` (bytes per cache manager) beside
    kvgen's plan for the serving parameters in ``plan`` (those of
    :func:`engine_pool_plan`): ``engine_pages`` per group, ``short`` where it builds fewer."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():  # type: ignore[arg-type]
        groups = [PoolGroup((p.slot_bytes,), len(p.life_cycles)) for p in pools]
        built = slots_for_quota(quota_bytes[manager], groups)
        out[manager] = [
            EnginePool(p.life_cycles, p.slot_bytes, p.planned_pages, b)
            for p, b in zip(pools, built, strict=True)
        ]
    return out


def engine_quota_for_requests(
    sizing: types.ModuleType, model: str, **plan: int | str
) -> dict[str, int]:
    """Per cache manager, the least GPU quota from which the early-2026 engine builds at
    least kvgen's pages in every pool group, so that every request runs to ``seq_len`` in
    the engine. Keywords: those of :func:`engine_pool_plan`. One pool group: kvgen's pool
    bytes (the engine rounds them up to its grain and gives the group all of it); several:
    the least multiple of the grain under the proportional split, far more than kvgen's
    pools for a sliding-window model, whose window pools the split overfeeds. The same
    answer as ``quota_for_requests(..., semantics="trtllm-v2")``, derived apart from it."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():  # type: ignore[arg-type]
        if len(pools) == 1:
            out[manager] = pools[0].slot_bytes * pools[0].planned_pages
            continue
        groups = [PoolGroup((p.slot_bytes,), len(p.life_cycles)) for p in pools]
        out[manager] = least_quota(groups, [p.planned_pages for p in pools])
    return out


def engine_pool_ratio(
    sizing: types.ModuleType, model: str, **plan: int | str
) -> dict[str, list[float]]:
    """Per cache manager, kvgen's bytes per pool group over its quota, in the engine's group
    order: the value for ``KVCacheManagerConfig.initial_pool_ratio`` of later revisions
    (read, not run: ``_config.py`` at 00043967, "one positive, normalized hot-tier byte-quota
    weight per layer group", ahead of ``typical_step``; ``constraints`` stay floors). The
    early-2026 revision the golden runs has no such option: hand it
    ``quota_for_requests`` (``"trtllm-v2"``) instead."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():  # type: ignore[arg-type]
        sizes = [p.slot_bytes * p.planned_pages for p in pools]
        out[manager] = [size / sum(sizes) for size in sizes]
    return out


def _name(window: int, sinks: int, chunk: int) -> str:
    if chunk:
        return f"chunk{chunk}"
    return f"swa{window}" + (f"s{sinks}" if sinks else "")
