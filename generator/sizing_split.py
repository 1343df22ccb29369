"""What a call's layers are before its options: per (model, profile) each manager's cached
kinds and life cycles (``_layers``), per split (tp, pp, rank, DCP) their sums on that rank in
O(kinds) (``_rank``; docs/cost-model.md §1, §3, §8, §9). Part of the runtime ``sizing_core``
binds (docs/api.md, "The interpreter").
"""

import functools
import itertools
from typing import Any

from .facts import kv_sharing_rank, state_heads_name, uneven_state
from .sizing_kinds import (
    _MODELS,
    _PROFILES,
    TOKENS_PER_BLOCK,
    Stack,
    _Cross,
    _elements,
    _Full,
    _kind_class,
    _Recurrent,
)
from .sizing_options import _headroom

__all__: list[str] = []

# A cached kind's layers of a manager (``_manager_layers``): the kind's running count over
# the model's pattern (``_prefix_counts``; None: a draft or extra layer, all held by the last
# rank, §6), its layer count, its slot (a life cycle's index in its manager's cycles, or
# _FULL, _STATE, _CROSS) and its row (``_CacheKind.row``); an attention row is its kind's
# bytes per token as a function of tp (its class's ``bytes_per_token`` over the row).
_Member = tuple[tuple[int, ...] | None, int, int, Any]
_FULL, _STATE, _CROSS = -1, -2, -3
# A sliding or chunked life cycle of a manager: (window, sinks, chunk (0: sliding), whether
# its kind reuses stale pages at once (scratch reuse, §3), and per headroom the options pick,
# ``2 * overlap_slack + block_reuse`` (retention, pages a request keeps, whether "exact"
# charges its context chunk a rounding)).
_Cycle = tuple[int, int, int, bool, tuple[tuple[int, int, bool], ...]]
# One manager's cached layers of a (model, profile), kept in ``_LAYERS``: (manager, members in
# table order, life cycles in (window, sinks, chunk) order). Plain tuples, like the rows on a
# rank below: internal, and a NamedTuple class costs ~0.1 ms of every import.
_Layers = tuple[str, tuple[_Member, ...], tuple[_Cycle, ...]]
# Per slot on one rank, summed over a manager's recurrent layers (``_state_at_tp``).
_StateSums = tuple[int, int, int, int]
_NO_STATE: _StateSums = (0, 0, 0, 0)
# A cross-attention kind on a rank: (layers, kv_heads, K and V head dims, element code,
# bytes per token not split by tp, encoder tokens of the spec).
_CrossRow = tuple[int, int, tuple[int, int], int, int, int]
# One manager's layers on one rank at one tp and DCP size, kept in ``_RANKS``: (manager, bytes
# per token of full attention (on one DCP rank, §9), the recurrent sums, its life cycles on
# the rank as (cycle, bytes per token of its layers, sum of its distinct b_l), its recurrent
# rows (``_state_at_tp``), its cross-attention rows and their bytes at the spec's encoder
# tokens).
_CyclesOnRank = tuple[tuple[_Cycle, int, int], ...]
_OnRank = tuple[
    str, int, _StateSums, _CyclesOnRank, tuple[tuple[int, ...], ...], tuple[_CrossRow, ...], int
]


def _rank_window(stack: Stack, pp_size: int, pp_rank: int) -> tuple[int, int, int]:
    """One pipeline rank's contiguous layers (the first ``count % pp`` ranks one more) as
    (start, end, laps): ``laps`` whole patterns and ``pattern[start:end]``, where an end past
    the period wraps round to the pattern's start (§1)."""
    base, rem = divmod(stack.layer_count, pp_size)
    period = len(stack.pattern)
    start = (pp_rank * base + min(pp_rank, rem)) % period
    laps, rest = divmod(base + (pp_rank < rem), period)
    return start, start + rest, laps


def _count_in(before: tuple[int, ...], window: tuple[int, int, int]) -> int:
    """A kind's layers in a rank's ``window`` (``_rank_window``) from its running count over
    the pattern (``before[i]``: its entries in pattern[:i]): O(1) per kind and split."""
    start, end, laps = window
    period = len(before) - 1
    if end <= period:
        return laps * before[period] + before[end] - before[start]
    return (laps + 1) * before[period] - before[start] + before[end - period]


def _prefix_counts(stack: Stack) -> dict[str, tuple[int, ...]]:
    """Per kind of ``stack``, how many of the first i pattern entries name it, i = 0..period."""
    return {
        name: (0, *itertools.accumulate(entry == name for entry in stack.pattern))
        for name in stack.kinds
    }


def _readers(stack: Stack) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    """The KV-sharing readers of ``stack`` as (kind, the layer it reads, its running count)."""
    if all(kind.reads is None for kind in stack.kinds.values()):
        return ()  # most stacks: no running count to build at import
    before = _prefix_counts(stack)
    return tuple(
        (name, kind.reads, before[name])
        for name, kind in stack.kinds.items()
        if kind.reads is not None
    )


def _check_shared_on_rank(
    model: str, pp_size: int, pp_rank: int, window: tuple[int, int, int]
) -> None:
    """ValueError naming the first layer of this rank that reads (KV sharing) a layer another
    pipeline rank holds: the engines refuse it (vLLM validate_kv_sharing_target). O(readers);
    the layer named is searched only when the split is refused."""
    stack = _MODELS[model].layers
    base, rem = divmod(stack.layer_count, pp_size)
    start = pp_rank * base + min(pp_rank, rem)
    away = []  # (first layer of the kind on this rank, the layer it reads)
    for name, reads, before in _READERS[model]:
        if reads < start and _count_in(before, window):
            phases = [i for i, entry in enumerate(stack.pattern) if entry == name]
            period = len(stack.pattern)
            away.append((min(start + (i - start) % period for i in phases), reads))
    if away:
        layer, reads = min(away)
        raise ValueError(kv_sharing_rank(pp_size, pp_rank, layer, reads))


def _layers(model: str, speculative: str) -> tuple[_Layers, ...]:
    """The managers' layers of (model, profile), kept in ``_LAYERS``: the target holds the
    model's layers and the profile's extra (EAGLE3/MTP) layers, a separate draft pool its
    draft's (§6)."""
    entry, profile = _MODELS[model], _PROFILES[speculative]
    target = [(entry.layers, True)]
    extra = entry.extra_layers.get(speculative)
    if extra is not None:
        target.append((extra, False))
    managers = [_manager_layers("target", target, speculative)]
    if profile.draft is not None:
        managers.append(_manager_layers("draft", [(profile.draft, False)], speculative))
    layers = _LAYERS[model, speculative] = tuple(managers)  # bounded: models x profiles
    return layers


def _manager_layers(manager: str, stacks: list[tuple[Stack, bool]], speculative: str) -> _Layers:
    """Each cached kind of ``stacks`` (a stack and whether a pipeline split counts its kinds)
    as a member, in table order; sliding and chunked kinds grouped by life cycle."""
    members: list[_Member] = []
    cycles: dict[tuple[int, int, int], tuple[int, Any]] = {}  # key -> (slot, class)
    for stack, split in stacks:
        before = _prefix_counts(stack) if split else {}
        for name, kind in stack.kinds.items():
            cls = _kind_class(kind)
            if cls.rows is None:
                continue
            slot = _STATE if cls.rows == 1 else _CROSS if cls.rows == 2 else _FULL
            window = kind.chunk or kind.window  # a chunked kind's life cycle spans a chunk
            if cls.rows == 0 and window is not None:  # a life cycle, by (window, sinks, chunk)
                key = (window, kind.sink_tokens, kind.chunk)
                slot = cycles.setdefault(key, (len(cycles), cls))[0]
            row: Any = cls.row(kind)
            if slot != _STATE and slot != _CROSS:
                row = functools.partial(cls.bytes_per_token, *row)  # type: ignore[attr-defined]
            members.append((before.get(name), kind.layers, slot, row))
            if kind.ssm_heads and cls is _Full:  # a parallel hybrid layer holds a state too (§8)
                members.append((before.get(name), kind.layers, _STATE, _Recurrent.row(kind)))
    # Life cycles in (window, sinks, chunk) order: their slots renumbered to that order.
    order = sorted(cycles)
    renumber = {cycles[key][0]: i for i, key in enumerate(order)}
    members = [(b, n, renumber.get(slot, slot), row) for b, n, slot, row in members]
    profile = _PROFILES[speculative]
    groups = tuple(_cycle(key, cycles[key][1], profile) for key in order)
    return manager, tuple(members), groups


def _cycle(key: tuple[int, int, int], life: Any, profile: Any) -> _Cycle:
    """A life cycle's pages under each headroom the options can pick (§3, §4, §5), through
    its kind's class: retention (block reuse extends a window by the backoff D), the pages
    pages(w, H) = live + 1 + sink pages a request keeps, and whether the headroom leaves the
    last context chunk without a spare page (pages(w, H) == pages(w, E)), which "exact"
    rounds up by tpb - 1 tokens."""
    window, sinks, chunk = key
    tpb = TOKENS_PER_BLOCK
    sink_pages = -(-sinks // tpb)
    variants = []
    for overlap_slack, block_reuse in ((False, False), (False, True), (True, False), (True, True)):
        retention = life.retention(window, profile.backoff if block_reuse else 0)
        live = life.live_pages(retention, _headroom(profile, overlap_slack), tpb)
        rounds = live == -(-(life.spare(retention, tpb) + profile.extra) // tpb)
        variants.append((retention, live + 1 + sink_pages, rounds))
    return window, sinks, chunk, life.scratch_reuse, tuple(variants)


def _rank(
    model: str, speculative: str, pp_size: int, pp_rank: int, tp_size: int, dcp: int
) -> tuple[_OnRank, ...]:
    """Each manager's layers on one rank at one tp and DCP size, kept in ``_RANKS``;
    ValueError (never kept) where the engines refuse the split: a KV-sharing reader away
    from its cache (§1), an uneven state (§8), full attention that does not split over DCP
    (§9)."""
    layers = _LAYERS.get((model, speculative)) or _layers(model, speculative)
    window = None
    if pp_size > 1:
        window = _rank_window(_MODELS[model].layers, pp_size, pp_rank)
        if model in _READERS:  # KV sharing: each reader on the rank of its cache (§1)
            _check_shared_on_rank(model, pp_size, pp_rank, window)
    last = pp_rank == pp_size - 1  # draft and extra layers live with the last pipeline stage
    on_ranks = []
    for manager in layers:
        on_ranks.append(_on_rank(manager, window, last, tp_size))
    if dcp != 1:  # each DCP rank holds one token in dcp of full attention (§9)
        on_ranks = [(r[0], _dcp_slope(r[0], r[1], dcp), *r[2:]) for r in on_ranks]
    ranked = tuple(on_ranks)
    if len(_RANKS) >= 4096:  # bounded like the answers cache
        _RANKS.clear()
    _RANKS[model, speculative, pp_size, pp_rank, tp_size, dcp] = ranked
    return ranked


def _on_rank(layers: _Layers, window: tuple[int, int, int] | None, last: bool, tp: int) -> _OnRank:
    """One manager's layers summed on a rank at tp: the model's layers in the rank's
    ``window`` (None: a single rank, every layer), draft and extra layers on the ``last``
    rank; each kind's bytes per token from its class (§1, §3)."""
    manager, members, groups = layers
    slope = 0
    cycles = [0] * len(groups)
    distinct: list[list[int]] = [[] for _ in groups] if groups else []  # b_l once per cycle
    states: tuple[tuple[int, ...], ...] = ()
    crosses: tuple[_CrossRow, ...] = ()
    for before, count, slot, row in members:
        if before is None:
            if not last:
                continue
        elif window is not None:
            count = _count_in(before, window)
        if not count:
            continue
        if slot == _STATE:
            states += ((count, *row),)
        elif slot == _CROSS:
            crosses += ((count, *row),)
        else:
            bpt = row(tp)
            if slot == _FULL:
                slope += count * bpt
            else:
                cycles[slot] += count * bpt
                if bpt not in distinct[slot]:
                    distinct[slot].append(bpt)  # scratch reuse grows one layer per (w, b_l)
    on_rank: _CyclesOnRank = ()
    if groups:  # the life cycles this rank holds layers of
        held = [(groups[i], cycles[i], sum(seen)) for i, seen in enumerate(distinct) if seen]
        on_rank = tuple(held)
    sums = _state_at_tp(states, tp) if states else _NO_STATE
    cross_bytes = _cross_bytes(crosses, tp, None) if crosses else 0
    return manager, slope, sums, on_rank, states, crosses, cross_bytes


def _dcp_slope(manager: str, slope: int, dcp: int) -> int:
    """Bytes per token of full-attention history on one DCP rank: each rank holds one token
    in ``dcp`` (§9); ValueError where that is not a whole number of bytes."""
    if slope % dcp:
        raise ValueError(
            f"{manager}: the {slope} bytes per token of full attention on this rank do not "
            f"divide by dcp_size {dcp}; the affine cost needs whole bytes per token of history"
        )
    return slope // dcp


def _state_at_tp(states: tuple[tuple[int, ...], ...], tp_size: int) -> _StateSums:
    """Per slot on one rank, summed over a manager's recurrent layers (§8): the state (conv +
    SSM), the conv windows, the SSM states, and one replay history step (x and B in the cache
    dtype, dt and dA_cumsum in fp32). A row is (layers, raw state bytes at tp=1, then by
    dimensions: SSM heads, head dim, d_state, groups, d_conv, conv and SSM element codes).
    ValueError naming tp_size where the engine's even split of heads or conv channels is
    impossible."""
    state = conv = ssm = replay = 0
    for layers, raw, heads, head_dim, d_state, groups, d_conv, conv_el, ssm_el in states:
        if not heads:
            state += layers * -(-raw // tp_size)
            continue
        conv_dim = heads * head_dim + 2 * groups * d_state
        heads_name = state_heads_name(groups, d_conv)
        for what, value in ((heads_name, heads), ("conv_dim", conv_dim)):
            if value % tp_size:
                raise ValueError(uneven_state(tp_size, what, value))
        heads //= tp_size
        one_conv = _elements(conv_dim // tp_size * (d_conv - 1), conv_el)
        one_ssm = _elements(heads * head_dim * d_state, ssm_el)
        one_step = _elements(heads * head_dim + groups // tp_size * d_state, conv_el)
        state += layers * (one_conv + one_ssm)
        conv += layers * one_conv
        ssm += layers * one_ssm
        replay += layers * (one_step + 2 * heads * 4)
    return state, conv, ssm, replay


def _cross_bytes(crosses: tuple[_CrossRow, ...], tp_size: int, encoder_tokens: int | None) -> int:
    """Bytes one request holds on a manager's cross-attention layers at one tp (§4): the K/V of
    its encoder tokens in whole pages, ``ceil(e/tpb)*tpb`` tokens per layer, allocated at
    admission and never grown; ``encoder_tokens`` (when given) replaces the spec's count."""
    total = 0
    for layers, kv_heads, head_dim, element, fixed, spec_tokens in crosses:
        tokens = encoder_tokens or spec_tokens
        bpt = _Cross.bytes_per_token(kv_heads, head_dim, element, fixed, tp_size)
        total += layers * -(-tokens // TOKENS_PER_BLOCK) * TOKENS_PER_BLOCK * bpt
    return total


# Per family (``_derive_split``): models with KV-sharing readers (their running counts), what
# a (model, profile) holds by manager (filled on first use, bounded by models x profiles),
# and what it holds on one rank at one tp and DCP size.
_READERS: dict[str, tuple[tuple[str, int, tuple[int, ...]], ...]] = {}
_LAYERS: dict[tuple[str, str], tuple[_Layers, ...]] = {}
_RANKS: dict[tuple[str, str, int, int, int, int], tuple[_OnRank, ...]] = {}


def _derive_split() -> None:
    """Per family, at bind (``sizing_core._derive``, over the family's namespace): the
    KV-sharing readers whose pipeline splits are checked (none: no per-split work), and
    empty caches."""
    global _READERS, _LAYERS, _RANKS
    _READERS = {
        name: readers for name, model in _MODELS.items() if (readers := _readers(model.layers))
    }
    _LAYERS = {}
    _RANKS = {}
