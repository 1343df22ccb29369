"""kvgen's serving plan carried into TensorRT-LLM's KV cache manager V2 (static side, stdlib).

``quota_for_requests(..., semantics="trtllm-v2")`` is the least quota of the pools kvgen
plans: so many full-attention pages, so many pages per sliding life cycle. The engine, given
that quota, builds other pools: it merges life cycles of equal slot size and splits the quota
in proportion to slot bytes x life cycles (:mod:`kvgen.trtllm_split`, the early-2026
revision), so a sliding-window model gets about as many full pages as window pages. For
gemma3_1b (4 requests to 2,048 tokens, max_num_tokens 256) kvgen plans 128 full + 40 window
pages in 91,226,112 B; the engine builds 56 + 53 from them and runs out of full pages.

* :func:`engine_pools` reports, per cache manager and pool group, kvgen's pages and the
  engine's pages for a quota;
* :func:`engine_quota_for_requests` is the least quota from which the engine builds at least
  kvgen's pages in every pool group: the quota to hand the engine (``KvCacheConfig`` /
  ``GpuCacheTierConfig(quota=...)``) so that the serving promise holds there.

Covered: attention-only managers (full and sliding life cycles) whose every life cycle's
buffers have one size (K and V alike, one kind of layer per life cycle), as in every family
the golden runs; anything else (recurrent or cross pools, decode context parallelism, a
resume-rounded draft) is refused with ``ValueError`` rather than guessed.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass

from kvgen.trtllm_split import PoolGroup, group_life_cycles, least_quota, slots_for_quota

__all__ = [
    "EnginePool",
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
    quota = sizing.quota_for_requests(
        model, requests=requests, seq_len=seq_len, speculative=speculative,
        max_num_tokens=max_num_tokens, tp_size=tp_size, pp_size=pp_size, pp_rank=pp_rank,
        semantics="trtllm-v2",
    )  # fmt: skip
    options = sizing._options(
        model, speculative, requests, max_num_tokens, seq_len, tp_size, pp_size, pp_rank
    )
    terms = sizing._cached_terms(options)
    profile = sizing._PROFILES[speculative]
    tpb = sizing.TOKENS_PER_BLOCK
    pages = -(-(seq_len - 1 + profile.extra + profile.step) // tpb)
    out = {}
    for t in terms:
        if t.resume_rounding is not None or t.states or t.span != tpb or t.fixed_pool_bytes:
            raise ValueError(
                f"{model} {t.manager}: the engine's pool split is modelled for "
                "attention-only managers (no recurrent, cross or DCP pools)"
            )
        tokens = requests * pages * tpb if t.slope else 0
        for window, _s, _p, _b, chunk in t.life_cycles:
            offset = chunk - 1 - math.gcd(chunk, tpb) if chunk else window - 2
            least = sizing._swa_context_tokens(offset, profile.extra,
                                               profile.extra + profile.step, requests,
                                               max_num_tokens, 0)  # fmt: skip
            tokens = max(tokens, least)
        context = -(-min(tokens, max_num_tokens) // tpb)
        cycles = [
            (_name(w, s, c), tpb * b, requests * p + context) for w, s, p, b, c in t.life_cycles
        ]
        if t.slope:
            cycles.append(("full", tpb * t.slope, -(-tokens // tpb)))
        # The engine keys groups by slot size; kvgen's cycles hold one buffer size each.
        group_of, groups = group_life_cycles([(size,) for _n, size, _p in cycles])
        pools = []
        for g, group in enumerate(groups):
            members = [c for c, k in zip(cycles, group_of, strict=True) if k == g]
            pools.append(EnginePool(tuple(n for n, _s, _p in members), group.slot_sizes[0],
                                    sum(p for _n, _s, p in members)))  # fmt: skip
        if sum(p.slot_bytes * p.planned_pages for p in pools) != quota[t.manager]:
            raise ValueError(f"{model} {t.manager}: pools other than attention pages")
        out[t.manager] = pools
    return out


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
    """Per cache manager, the least GPU quota (in the engine's grain) from which the
    early-2026 engine builds at least kvgen's pages in every pool group, so that the
    ``quota_for_requests`` promise (every request runs to ``seq_len``) holds in the engine.
    Keywords: those of :func:`engine_pool_plan`. At least ``quota_for_requests``; far more
    for a sliding-window model, whose window pools the proportional split overfeeds."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():  # type: ignore[arg-type]
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
    :func:`engine_quota_for_requests` instead."""
    out = {}
    for manager, pools in engine_pool_plan(sizing, model, **plan).items():  # type: ignore[arg-type]
        sizes = [p.slot_bytes * p.planned_pages for p in pools]
        out[manager] = [size / sum(sizes) for size in sizes]
    return out


def _name(window: int, sinks: int, chunk: int) -> str:
    if chunk:
        return f"chunk{chunk}"
    return f"swa{window}" + (f"s{sinks}" if sinks else "")
