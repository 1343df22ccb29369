"""How TensorRT-LLM's KV cache manager V2 turns one GPU quota into pools (stdlib only).

The engine (``tensorrt_llm/runtime/kv_cache_manager_v2/``, the early-2026 revision that
``bench/engines/trtllm_source.py`` pins) does not size pools from kvgen's plan: it is given a
byte quota per cache tier and

1. merges life cycles whose slots have the same list of pool sizes into one pool group
   (``_storage/_config.py`` ``create_storage_config``);
2. rounds the GPU quota up to a grain of 2 MiB << min(4, max(0, int(log2(q / 1 GiB)))), at
   least one grain per pool (``_storage_manager.py`` ``CacheLevelManager``): 2 MiB below 2 GiB,
   4 MiB from 2 GiB, ... 32 MiB from 16 GiB;
3. splits it over the pool groups in proportion to slot bytes x life cycles, a ratio the
   engine marks TODO for sliding windows (``StorageManager.__init__``), group by group from
   the smallest ratio, each group's grains over its pools by slot size, Python ``round``
   throughout (``_storage/_core.py`` ``CacheLevelStorage._ratio_to_slot_count_list``).

Every function here mirrors that code operation for operation (floats included), so the
slots it returns are the engine's; ``tests/unit/test_trtllm_split.py`` replays the pools the
engine built for recorded quotas (``tests/fixtures/engines/trtllm.json``). This revision
takes no ratio from its user: a quota is the only knob, hence :func:`least_quota`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "GPU_PAGE",
    "PoolGroup",
    "TrtllmPlan",
    "adjusted_quota",
    "gpu_grain",
    "group_life_cycles",
    "least_quota",
    "proportional_ratio",
    "slots_for_quota",
    "whole_grains",
]

GPU_PAGE = 2 << 20  # the engine's physical page of virtual memory, 2 MiB
_MAX_SCAN = 1 << 16  # grains least_quota tries past its lower bound before giving up


class PoolGroup(NamedTuple):
    """One engine pool group: the bytes of one slot in each of its pools (largest first, as
    the engine sorts coalesced buffers) and how many life cycles share it."""

    slot_sizes: tuple[int, ...]
    life_cycles: int = 1


class TrtllmPlan(NamedTuple):
    """One manager's pool groups in TensorRT-LLM V2 (a sizing module's ``trtllm_plans``; defined
    here, below the engine policies and the 38198e34 splits that both read it): per group
    its slot bytes, life cycles (window, sinks, chunk; 0 for full attention), the pages one
    request holds whatever T (pages(w, H) per sliding cycle), its sliding cycles (each also
    min(k, n) context pages) and full ones (k pages); the groups as the engine's split sees
    them, the requests B (a group's fixed pages are B times its pages per request), n =
    ceil(N/tpb), N, and whether a full pool grows with T."""

    groups: tuple[tuple[int, tuple[tuple[int, int, int], ...], int, int, int], ...]
    pools: tuple[PoolGroup, ...]
    batch: int
    context: int
    chunk: int
    grows: bool


def group_life_cycles(slot_sizes: Sequence[tuple[int, ...]]) -> tuple[list[int], list[PoolGroup]]:
    """The engine's grouping of life cycles (in registry order) by equal slot-size lists:
    the pool group of every life cycle, and the groups in order of first appearance."""
    order: dict[tuple[int, ...], int] = {}
    counts: list[int] = []
    group_of = []
    for sizes in slot_sizes:
        key = tuple(sorted(sizes, reverse=True))
        if key not in order:
            order[key] = len(order)
            counts.append(0)
        counts[order[key]] += 1
        group_of.append(order[key])
    groups = [PoolGroup(key, counts[i]) for key, i in order.items()]
    return group_of, groups


def gpu_grain(quota: int) -> int:
    """The GPU tier's pool-size grain for ``quota`` bytes (the engine's ``phys_mem_size``)."""
    if quota <= 0:
        raise ValueError(f"quota must be a positive number of bytes, got {quota}")
    # The engine's math.log(x, 2) (_storage_manager.py), which CPython computes as
    # log(x) / log(2): its float can fall just under an exact power of two where log2's does not.
    exponent = int(math.log(quota / (GPU_PAGE * 512)) / math.log(2))
    return GPU_PAGE << min(4, max(0, exponent))


def whole_grains(share: int) -> int:
    """A share as the quota kvgen hands the engine: its whole grains (the engine rounds a
    quota up to its grain, so it keeps these bytes as given); a share under one grain as is."""
    return share - share % gpu_grain(share) or share


def adjusted_quota(quota: int, groups: Sequence[PoolGroup]) -> int:
    """The quota the engine really uses: rounded up to the grain, one grain per pool at least."""
    grain = gpu_grain(quota)
    pools = sum(len(g.slot_sizes) for g in groups)
    return max(grain * pools, -(-quota // grain) * grain)


def proportional_ratio(groups: Sequence[PoolGroup]) -> list[float]:
    """The early-2026 initial ratio: slot bytes x life cycles of each group, normalised."""
    ratio = [float(sum(g.slot_sizes) * g.life_cycles) for g in groups]
    total = sum(ratio)
    return [x / total for x in ratio]


def slots_for_quota(
    quota: int, groups: Sequence[PoolGroup], ratio: Sequence[float] | None = None
) -> tuple[int, ...]:
    """Slots (pages) of every pool group the engine builds from a GPU quota of ``quota``
    bytes; ``ratio`` defaults to :func:`proportional_ratio` (the only one this revision uses)."""
    if not groups:
        raise ValueError("a cache manager needs at least one pool group")
    grain = gpu_grain(quota)
    total_grains = adjusted_quota(quota, groups) // grain
    ratio_list = list(proportional_ratio(groups) if ratio is None else ratio)
    remaining = total_grains
    slots = [0] * len(groups)
    order = sorted(range(len(ratio_list)), key=lambda i: ratio_list[i])
    for i, pg in enumerate(order):
        sizes = groups[pg].slot_sizes
        least = [-(-s // grain) for s in sizes]
        pct = ratio_list[pg] / sum(ratio_list[j] for j in order[i:])
        pg_grains = max(round(remaining * pct), sum(least))
        count = 1 << 63
        left = pg_grains
        pools = sorted(range(len(sizes)), key=lambda k: sizes[k])
        for j, pool in enumerate(pools):
            size = sizes[pool]
            share = size / sum(sizes[k] for k in pools[j:])
            pool_grains = max(least[pool], round(left * share))
            count = min(count, pool_grains * grain // size)
            left -= pool_grains
        slots[pg] = count
        remaining -= pg_grains
    if remaining != 0:  # the engine asserts the same: its minimum grains overran the quota
        raise ValueError(f"quota {quota} is too small for {len(groups)} pool groups")
    return tuple(slots)


def least_quota(groups: Sequence[PoolGroup], pages: Sequence[int]) -> int:
    """The least GPU quota (a multiple of the engine's grain, so the engine keeps it as
    given) from which the engine builds at least ``pages[g]`` slots in every pool group g.

    Under the proportional split each group gets about ``ratio_g * q`` bytes, so q is at
    least ``max_g(pages_g * slot_bytes_g / ratio_g)``; rounding each group's grains can favour
    a group by a grain, so the scan starts two grains per group below that bound and walks
    up one grain at a time (every quota within a grain builds the same pools)."""
    if len(pages) != len(groups):
        raise ValueError("one page count per pool group")
    ratio = proportional_ratio(groups)
    need = [p * sum(g.slot_sizes) for p, g in zip(pages, groups, strict=True)]
    bound = int(max(max(n / r for n, r in zip(need, ratio, strict=True)), sum(need), 1))
    margin = 2 * (len(groups) + 2) * gpu_grain(bound)
    quota = max(GPU_PAGE, (bound - margin) // GPU_PAGE * GPU_PAGE)
    for _step in range(_MAX_SCAN):
        quota = adjusted_quota(quota, groups)  # the quota the engine keeps
        built = _slots_or_none(quota, groups)
        if built is not None and all(b >= p for b, p in zip(built, pages, strict=True)):
            return quota
        quota += GPU_PAGE
    raise ValueError(f"no quota up to {quota} bytes holds {pages}")


def _slots_or_none(quota: int, groups: Sequence[PoolGroup]) -> tuple[int, ...] | None:
    try:
        return slots_for_quota(quota, groups)
    except ValueError:
        return None
