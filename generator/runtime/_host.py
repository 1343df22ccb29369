"""The host tier of TensorRT-LLM V2's cache manager: how a host quota becomes page rows.

The engine (the early-2026 ``kv_cache_manager_v2`` revision; ``HostCacheTierConfig``) gives a
cache manager a second cache level in host memory when its ``cache_tiers`` list one after the
GPU tier. ``CacheLevelManager._create_cache_level_storage`` rounds the host quota up to whole
2 MiB grains (``HostMem.ALIGNMENT``), one grain per pool at least, and
``CacheLevelStorage._ratio_to_slot_count_list`` splits the grains over the pool groups in the
same ratio as the GPU tier (slot bytes x life cycles), group by group from the smallest ratio,
each group's grains over its pools by slot size, Python ``round`` throughout. The shim's
pools are the engine's pool groups, so :func:`host_rows` gives each its rows.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["HOST_GRAIN", "host_rows"]

HOST_GRAIN = 2 << 20  # the engine's host pool-size grain (HostMem.ALIGNMENT), 2 MiB


def host_rows(quota: int, groups: Sequence[tuple[tuple[int, ...], int]]) -> list[int]:
    """Host page rows of every pool group for a host quota of ``quota`` bytes; ``groups``:
    each pool group's slot sizes (largest first) and its number of life cycles."""
    pools = sum(len(sizes) for sizes, _n in groups)
    remaining = max(HOST_GRAIN * pools, -(-quota // HOST_GRAIN) * HOST_GRAIN) // HOST_GRAIN
    ratio = [float(sum(sizes) * n) for sizes, n in groups]
    total = sum(ratio)
    ratio = [x / total for x in ratio]
    rows = [0] * len(groups)
    order = sorted(range(len(ratio)), key=lambda g: ratio[g])
    for at, g in enumerate(order):
        sizes = groups[g][0]
        least = [-(-s // HOST_GRAIN) for s in sizes]
        grains = max(round(remaining * (ratio[g] / sum(ratio[j] for j in order[at:]))), sum(least))
        count, left = 1 << 63, grains
        by_size = sorted(range(len(sizes)), key=lambda k: sizes[k])
        for j, pool in enumerate(by_size):
            share = sizes[pool] / sum(sizes[k] for k in by_size[j:])
            pool_grains = max(least[pool], round(left * share))
            count = min(count, pool_grains * HOST_GRAIN // sizes[pool])
            left -= pool_grains
        rows[g] = count
        remaining -= grains
    return rows
