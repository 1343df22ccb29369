"""How TensorRT-LLM 38198e34's V2 manager splits its GPU quota into pool groups (stdlib only).

At NVIDIA/TensorRT-LLM 38198e34 the KV cache manager V2's storage is C++
(``cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/``); the Python package
``tensorrt_llm/runtime/kv_cache_manager_v2`` only re-exports its bindings. The Python side of
that commit hands the split its inputs (``KVCacheManagerV2._build_base_config``:
``typical_step``, ``constraints``, ``initial_pool_ratio``; ``kvgen.sizing._trtllm_budget.
pool_split_inputs``) and the C++ ``StorageManager`` constructor turns them into slots per pool
group. Every function here transcribes that C++ rule operation for operation, float32 where
the engine keeps a ``float``; ``bench/engines/trtllm_oracle.py`` compiles the engine's own
C++ functions on CPU and ``tests/generated/test_trtllm_pool_split_goldens.py`` holds kvgen
to what they return (docs/cost-model.md §11). The C++ text was read at the index versions
``bench/engines/trtllm_static_source.py`` names (the index holds no copy at 38198e34 itself).

The rule, for one manager of life cycles (distinct (window, sink blocks) of its layers, in
order of first appearance; a window of max_seq_len is full attention) and a GPU quota q:

1. life cycles whose slot-size lists are equal share a pool group; groups are ordered by that
   list (``createStorageConfig``);
2. each life cycle's floor (``computeSlotsFromConstraints``): a sliding one
   ``sinks + (w + tpb - 2) // tpb + 1`` pages, a full one the largest sliding floor (1 if
   none); a pool group's least slots are its cycles' floors, raised to
   ``ceil(slots(constraint) / u)`` for each constraint batch (u the float32
   ``max_util_for_resume``; a recurrent group is not scaled);
3. the byte ratio per life cycle: ``initial_pool_ratio`` when given; else the page need of
   ``typical_step``; else of the constraints (floors included); else of one request of 2,049
   tokens with 2,048 of history. A batch's page need per life cycle is, per request,
   ``ceil(capacity / tpb)`` less its stale pages (``AttnLifeCycle::getStaleRange``), in
   bytes each pool rounded up to the grain; the cycles' ratios summed per pool group;
4. ``CacheLevelStorage::ratioToSlotCountList``: the quota, rounded up to the grain and at
   least the groups' least bytes, in grains, shared from the smallest ratio up; a group whose
   share does not exceed its least slots is pinned there and the rest shared again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from ._trtllm_budget import gpu_alloc_granularity
from .facts import float32, float32s

__all__ = [
    "FALLBACK_STEP",
    "PoolSplit",
    "TrtllmLifeCycle",
    "checked_ratio",
    "fallback_ratio",
    "grains_for_slots",
    "grains_to_slots",
    "group_ratio",
    "life_cycle_floors",
    "one_pool_slot_counts",
    "pool_groups",
    "ratio_to_slot_count_list",
    "slots_for_batch",
    "split_quota",
    "stale_range",
]

# The batch whose page need sizes the pools when neither typical_step nor constraints are
# given: one request of 2,049 tokens, 2,048 of them history (capacity, history).
FALLBACK_STEP = ((2049, 2048),)
# initial_pool_ratio's sum must be within this of 1.0 (the engine refuses otherwise).
_RATIO_SUM_TOLERANCE = 1e-6


class TrtllmLifeCycle(NamedTuple):
    """One life cycle of a manager, the engine's ``TrtllmLifeCycle``: its window (None: full
    attention), sink pages and whether it is the recurrent (SSM) one (one page per request)."""

    window: int | None
    sink_blocks: int = 0
    ssm: bool = False


class PoolSplit(NamedTuple):
    """What the engine builds from one GPU quota: the pool group of every life cycle, each
    group's slot sizes, the least slots, the ratio (float32) and the slots of each group."""

    group_of: tuple[int, ...]
    slot_sizes: tuple[tuple[int, ...], ...]
    min_slots: tuple[int, ...]
    ratio: tuple[float, ...]
    slots: tuple[int, ...]
    grain: int
    quota: int  # the quota the groups share: rounded up to the grain, at least their floors


def _trunc_div(a: int, b: int) -> int:
    """C++ integer division (towards zero) of a by a positive b."""
    q = abs(a) // b
    return q if a >= 0 else -q


def stale_range(lc: TrtllmLifeCycle, history: int, tpb: int) -> tuple[int, int]:
    """Pages of a request with ``history`` tokens that its life cycle no longer keeps
    (``getStaleRange``): none for full attention; for a window, from the sink pages to
    ``(history + 1 - w) // tpb``; a recurrent cycle keeps only its last page."""
    if lc.ssm:
        return 0, history // tpb
    start = min(-(-history // tpb), lc.sink_blocks)
    if lc.window is None:
        return start, start
    return start, max(start, _trunc_div(history + 1 - lc.window, tpb))


def _length(span: tuple[int, int]) -> int:
    return span[1] - span[0] if span[0] < span[1] else 0


def slots_for_batch(
    life_cycles: Sequence[TrtllmLifeCycle], batch: Sequence[Sequence[int]], tpb: int
) -> list[int]:
    """Pages each life cycle needs for ``batch`` (requests of (capacity, history[, beam
    width 1])), no shared system prompt, no scratch reuse (``computeSlotsForBatch``)."""
    out = []
    for lc in life_cycles:
        if lc.ssm:
            out.append(len(batch))
            continue
        need = 0
        for request in batch:
            capacity, history = request[0], request[1]
            if len(request) > 2 and request[2] != 1:
                raise ValueError("the pool split is modelled for beam width 1")
            need += max(0, -(-capacity // tpb) - _length(stale_range(lc, history, tpb)))
        out.append(need)
    return out


def pool_groups(
    slot_sizes: Sequence[Sequence[int]],
) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """The pool group of each life cycle (whose pools' slot sizes are ``slot_sizes[i]``) and
    each group's slot sizes: one group per distinct list of sizes (largest first), groups in
    ascending order of that list (the engine keys them in a std::map)."""
    keys = [tuple(sorted(sizes, reverse=True)) for sizes in slot_sizes]
    ordered = tuple(sorted(set(keys)))
    index = {key: i for i, key in enumerate(ordered)}
    return tuple(index[key] for key in keys), ordered


def life_cycle_floors(life_cycles: Sequence[TrtllmLifeCycle], tpb: int) -> list[int]:
    """Each life cycle's least pages: a window's ``sinks + (w + tpb - 2) // tpb + 1`` (the
    window sliding over page boundaries), a full cycle the largest of those (1 without any),
    a recurrent cycle 1."""

    def swa(lc: TrtllmLifeCycle) -> int:
        assert lc.window is not None
        return lc.sink_blocks + (lc.window + tpb - 2) // tpb + 1

    full = max([1] + [swa(lc) for lc in life_cycles if not lc.ssm and lc.window is not None])
    return [1 if lc.ssm else full if lc.window is None else swa(lc) for lc in life_cycles]


def _normalize(values: Sequence[int]) -> list[float]:
    """``normalizeToRatio`` of integers: float(v) / float(total), in float32."""
    total = float32(float(sum(values)))
    return [float32(float32(float(v)) / total) for v in values]


def _normalize_f32(values: Sequence[float]) -> list[float]:
    """``normalizeToRatio`` of floats (float32 values): a float32 running sum, then float32
    quotients (the first sum 0 + v is v itself)."""
    total = values[0]
    for v in values[1:]:
        total = float32(total + v)
    return float32s([v / total for v in values])


def grains_for_slots(slots: int, sizes: Sequence[int], grain: int) -> int:
    """Grains ``slots`` slots take in a pool group, each pool rounded up to the grain."""
    return sum(-(-slots * s // grain) for s in sizes)


def grains_to_slots(grains: int, sizes: Sequence[int], grain: int) -> tuple[int, int]:
    """The most slots ``grains`` grains give a pool group and the grains they use
    (``grainsToSlots``): (0, 0) below one grain per pool."""
    if len(sizes) == 1:  # one pool: the greedy count is already the most (n*s <= grains*grain)
        size = sizes[0]
        if grains < -(-size // grain):
            return 0, 0
        count = grains * grain // size
        return count, -(-count * size // grain)
    least = [-(-s // grain) for s in sizes]
    if grains < sum(least):
        return 0, 0
    count = 1 << 62
    left = grains
    order = sorted(range(len(sizes)), key=lambda k: sizes[k])
    for j, pool in enumerate(order):
        total = sum(sizes[k] for k in order[j:])
        frac = sizes[pool] / total if total > 0 else 1.0
        pool_grains = max(least[pool], round(left * frac))
        count = min(count, pool_grains * grain // sizes[pool])
        left -= pool_grains
    lo, step = count, 1
    hi = lo + step
    while grains_for_slots(hi, sizes, grain) <= grains:
        lo = hi
        step *= 2
        hi = lo + step
    while lo + 1 < hi:
        mid = lo + (hi - lo) // 2
        if grains_for_slots(mid, sizes, grain) <= grains:
            lo = mid
        else:
            hi = mid
    return lo, grains_for_slots(lo, sizes, grain)


def ratio_to_slot_count_list(
    quota: int,
    sizes: Sequence[Sequence[int]],
    ratio: Sequence[float],
    grain: int,
    min_slots: Sequence[int],
) -> list[int]:
    """Slots per pool group from a quota (a multiple of the grain), the float32 ratio per
    group and the least slots (``CacheLevelStorage::ratioToSlotCountList``)."""
    remaining = quota // grain
    slots = [0] * len(sizes)
    active = list(range(len(sizes)))
    while active:
        got = [0] * len(active)
        budget = remaining
        order = sorted(range(len(active)), key=lambda i: ratio[active[i]])
        for i, idx in enumerate(order):
            total = 0.0
            for j in order[i:]:
                total += ratio[active[j]]
            pct = ratio[active[idx]] / total if total > 0.0 else 1.0
            got[idx], used = grains_to_slots(round(budget * pct), sizes[active[idx]], grain)
            budget -= used
        pinned = [i for i in range(len(active)) if got[i] <= min_slots[active[i]]]
        if not pinned:
            for i, pg in enumerate(active):
                slots[pg] = got[i]
            break
        for i in pinned:
            pg = active[i]
            least = grains_for_slots(min_slots[pg], sizes[pg], grain)
            slots[pg], used = grains_to_slots(least, sizes[pg], grain)
            remaining -= used
        free = [pg for i, pg in enumerate(active) if i not in pinned]
        if not free:
            break
        if remaining == 0:
            raise ValueError("Insufficient quota to satisfy min_slots constraints")
        active = free
    for pg, group in enumerate(sizes):  # a grain's slack can hold another slot
        now = grains_for_slots(slots[pg], group, grain)
        while grains_for_slots(slots[pg] + 1, group, grain) <= now:
            slots[pg] += 1
    return slots


def one_pool_slot_counts(
    quota: int,
    sizes: Sequence[int],
    ratio: Sequence[float],
    grain: int,
    min_slots: Sequence[int],
) -> list[int]:
    """:func:`ratio_to_slot_count_list` where every pool group holds one pool (``sizes[g]``:
    its slot bytes), operation for operation: one pool's ``grainsToSlots`` is
    ``grains * grain // size`` slots (its greedy count, which the search then keeps), and
    no grain's slack holds another slot. Its ``tests/unit/test_trtllm_pool_split.py`` twin
    compares the two."""
    remaining = quota // grain
    if len(sizes) == 1:  # one group: the loop below, once, its ratio over itself
        size, least = sizes[0], min_slots[0]
        pct = ratio[0] / ratio[0] if ratio[0] > 0.0 else 1.0
        grains = round(remaining * pct)
        count = 0 if grains < -(-size // grain) else grains * grain // size
        if count <= least:  # pinned at its least slots, the only group
            grains = -(-least * size // grain)
            count = 0 if grains < -(-size // grain) else grains * grain // size
        return [count]
    if len(sizes) == 2:  # two groups: the loop's first round; its answer where none is pinned
        first, second = (1, 0) if ratio[1] < ratio[0] else (0, 1)
        pair = [0, 0]
        budget = remaining
        for pg, total in ((first, ratio[first] + ratio[second]), (second, ratio[second])):
            pct = ratio[pg] / total if total > 0.0 else 1.0
            grains, size = round(budget * pct), sizes[pg]
            if grains >= -(-size // grain):
                pair[pg] = count = grains * grain // size
                budget -= -(-count * size // grain)
        if pair[0] > min_slots[0] and pair[1] > min_slots[1]:
            return pair
    slots = [0] * len(sizes)
    active = list(range(len(sizes)))
    while active:
        order = sorted(active, key=ratio.__getitem__)  # stable: ties in group order
        got = {}
        budget = remaining
        for i, pg in enumerate(order):
            total = 0.0
            for j in order[i:]:
                total += ratio[j]
            pct = ratio[pg] / total if total > 0.0 else 1.0
            grains, size = round(budget * pct), sizes[pg]
            if grains < -(-size // grain):
                got[pg] = 0
                continue
            got[pg] = count = grains * grain // size
            budget -= -(-count * size // grain)
        pinned = [pg for pg in active if got[pg] <= min_slots[pg]]
        if not pinned:
            for pg in active:
                slots[pg] = got[pg]
            break
        for pg in pinned:
            size = sizes[pg]
            least = -(-min_slots[pg] * size // grain)
            if least < -(-size // grain):
                continue  # no slot: slots[pg] stays 0, no grain used
            slots[pg] = count = least * grain // size
            remaining -= -(-count * size // grain)
        free = [pg for pg in active if pg not in pinned]
        if not free:
            break
        if remaining == 0:
            raise ValueError("Insufficient quota to satisfy min_slots constraints")
        active = free
    return slots


def checked_ratio(initial_pool_ratio: Sequence[float], life_cycles: int) -> list[float]:
    """``initial_pool_ratio`` as the engine keeps it (float32, one weight per life cycle), or
    ValueError where it refuses the list: a length other than the life cycles', a weight not
    positive, or a sum (a double running sum of the float32 values) not within 1e-6 of 1."""
    if len(initial_pool_ratio) != life_cycles:
        raise ValueError("initial_pool_ratio length must match number of layer groups")
    lc_ratio = float32s(initial_pool_ratio)
    total = 0.0  # a double running sum of the float32 values
    for r in lc_ratio:
        if r <= 0.0:
            raise ValueError("initial_pool_ratio values must be positive")
        total += r
    if not (math.isfinite(total) and abs(total - 1.0) <= _RATIO_SUM_TOLERANCE):
        raise ValueError("initial_pool_ratio values must sum to 1.0")
    return lc_ratio


def fallback_ratio(
    life_cycles: Sequence[TrtllmLifeCycle],
    group_of: Sequence[int],
    sizes: Sequence[Sequence[int]],
    grain: int,
    tpb: int,
) -> list[float]:
    """The byte ratio per life cycle where neither ``initial_pool_ratio``, ``typical_step``
    nor constraints are given: the page need of ``FALLBACK_STEP``, each pool in whole grains."""
    lc_slots = slots_for_batch(life_cycles, FALLBACK_STEP, tpb)
    return _normalize([
        sum(-(-n * s // grain) * grain for s in sizes[pg])
        for n, pg in zip(lc_slots, group_of, strict=True)
    ])  # fmt: skip


def group_ratio(lc_ratio: Sequence[float], group_of: Sequence[int], count: int) -> list[float]:
    """The life cycles' ratios (float32 values) summed per pool group in float32 (a group's
    first sum, 0 + r, is r itself) and normalised (float32)."""
    summed = [0.0] * count
    for r, pg in zip(lc_ratio, group_of, strict=True):
        held = summed[pg]
        summed[pg] = float32(held + r) if held else r
    return _normalize_f32(summed)


def split_quota(
    quota: int,
    life_cycles: Sequence[TrtllmLifeCycle],
    slot_sizes: Sequence[Sequence[int]],
    tpb: int,
    *,
    typical_step: Sequence[Sequence[int]] | None = None,
    constraints: Sequence[Sequence[Sequence[int]]] = (),
    initial_pool_ratio: Sequence[float] | None = None,
    max_util_for_resume: float = 0.95,
) -> PoolSplit:
    """The slots per pool group 38198e34's ``StorageManager`` builds from a GPU quota of
    ``quota`` bytes for ``life_cycles`` (``slot_sizes[i]``: the slot bytes of each pool of
    cycle i) and the inputs ``kvgen.sizing._trtllm_budget.pool_split_inputs`` gives (typical step,
    constraints, initial ratio). ValueError where the engine refuses the ratio or the quota."""
    util = float32(max_util_for_resume)
    if not 0.0 < util <= 1.0:
        raise ValueError("max_util_for_resume must be in (0, 1]")
    group_of, sizes = pool_groups(slot_sizes)
    count = len(sizes)
    grain = gpu_alloc_granularity(quota)
    growing = [False] * count  # a group with a cycle whose state grows (not recurrent)
    for lc, pg in zip(life_cycles, group_of, strict=True):
        growing[pg] = growing[pg] or not lc.ssm
    floors = life_cycle_floors(life_cycles, tpb)

    def scaled(slots: int, pg: int) -> int:
        return math.ceil(slots / util) if growing[pg] else slots

    least = [0] * count
    for floor, pg in zip(floors, group_of, strict=True):
        least[pg] += floor
    for batch in constraints:
        per_group = [0] * count
        for need, pg in zip(slots_for_batch(life_cycles, batch, tpb), group_of, strict=True):
            per_group[pg] += need
        least = [max(least[pg], scaled(per_group[pg], pg)) for pg in range(count)]

    def lc_bytes(lc_slots: Sequence[int]) -> list[int]:
        return [
            sum(-(-n * s // grain) * grain for s in sizes[pg])
            for n, pg in zip(lc_slots, group_of, strict=True)
        ]

    if initial_pool_ratio is not None:
        lc_ratio = checked_ratio(initial_pool_ratio, len(life_cycles))
    elif typical_step is not None:
        lc_ratio = _normalize(lc_bytes(slots_for_batch(life_cycles, typical_step, tpb)))
    elif constraints:
        lc_slots = list(floors)
        for batch in constraints:
            needs = slots_for_batch(life_cycles, batch, tpb)
            rows = zip(lc_slots, needs, group_of, strict=True)
            lc_slots = [max(s, scaled(n, pg)) for s, n, pg in rows]
        lc_ratio = _normalize(lc_bytes(lc_slots))
    else:
        lc_ratio = fallback_ratio(life_cycles, group_of, sizes, grain, tpb)
    ratio = group_ratio(lc_ratio, group_of, count)
    floor_bytes = sum(grains_for_slots(least[pg], sizes[pg], grain) for pg in range(count))
    used = max(floor_bytes * grain, -(-quota // grain) * grain)
    slots = ratio_to_slot_count_list(used, sizes, ratio, grain, least)
    if initial_pool_ratio is not None:
        for pg in range(count):  # a recurrent group needing no headroom keeps its floor
            if growing[pg] or not any(lc.ssm for lc in life_cycles):
                continue
            requested = round((used // grain) * ratio[pg])
            if requested <= grains_for_slots(least[pg], sizes[pg], grain):
                slots[pg] = least[pg]
    return PoolSplit(group_of, sizes, tuple(least), tuple(ratio), tuple(slots), grain, used)
