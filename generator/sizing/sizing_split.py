"""What a call's layers are before its options: per (model, profile) each manager's cached
kinds and life cycles (``_layers``), per split (tp, pp, rank, DCP) their sums on that rank in
O(kinds) (``_rank``; docs/cost-model.md §1, §3, §8, §9). Part of the interpreter ``sizing_core``
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

# A cached kind's layers of a manager (``_manager_layers``) start with the kind's running count
# over the model's pattern (``_prefix_counts``; None: a draft or extra layer, all held by the
# last rank, §6) and its layer count. An attention kind's member goes on with its slot (a life
# cycle's index in its manager's cycles, or _FULL) and its bytes per token at a tp as plain
# ints, ``fixed + ceil(kv_heads / tp) * per_head`` (``_Full.per_head``), or for a scaled
# layout its class's ``bytes_per_token`` over the row: a new split then sums ints in one loop
# instead of calling each kind's class. A recurrent or cross member goes on with its row.
_Member = tuple[tuple[int, ...] | None, int, int, int, int, int, Any]
_RowMember = tuple[tuple[int, ...] | None, int, tuple[int, ...]]
_FULL = -1
# A sliding or chunked life cycle of a manager: (window, sinks, chunk (0: sliding), whether
# its kind reuses stale pages at once (scratch reuse, §3), and per headroom the options pick,
# ``2 * overlap_slack + block_reuse`` (retention, pages a request keeps, whether "exact"
# charges its context chunk a rounding)).
_Cycle = tuple[int, int, int, bool, tuple[tuple[int, int, bool], ...]]
# One manager's cached layers of a (model, profile), kept in ``_LAYERS``: (manager, attention
# members in table order, recurrent members, cross members, life cycles in (window, sinks,
# chunk) order). Plain tuples, like the rows on a rank below: internal, and a NamedTuple class
# costs ~0.1 ms of every import.
_Layers = tuple[
    str, tuple[_Member, ...], tuple[_RowMember, ...], tuple[_RowMember, ...], tuple[_Cycle, ...]
]
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
    states: list[_RowMember] = []
    crosses: list[_RowMember] = []
    cycles: dict[tuple[int, int, int], tuple[int, Any]] = {}  # key -> (slot, class)
    for stack, split in stacks:
        before = _prefix_counts(stack) if split else {}
        for name, kind in stack.kinds.items():
            cls = _kind_class(kind)
            counted = before.get(name)
            if cls.rows == 1 or cls.rows == 2:
                (states if cls.rows == 1 else crosses).append((counted, kind.layers, cls.row(kind)))
                continue
            if cls.rows is None:
                continue
            slot = _FULL
            window = kind.chunk or kind.window  # a chunked kind's life cycle spans a chunk
            if window is not None:  # a life cycle, by (window, sinks, chunk)
                key = (window, kind.sink_tokens, kind.chunk)
                slot = cycles.setdefault(key, (len(cycles), cls))[0]
            row = cls.row(kind)
            per_head = cls.per_head(*row)  # type: ignore[attr-defined]
            scaled = None  # a scaled layout: its class's formula at each tp
            if per_head is None:
                scaled = functools.partial(cls.bytes_per_token, *row)  # type: ignore[attr-defined]
            members.append((counted, kind.layers, slot, row[0], per_head or 0, row[3], scaled))
            if kind.ssm_heads and cls is _Full:  # a parallel hybrid layer holds a state too (§8)
                states.append((counted, kind.layers, _Recurrent.row(kind)))
    # Life cycles in (window, sinks, chunk) order: their slots renumbered to that order.
    order = sorted(cycles)
    renumber = {cycles[key][0]: i for i, key in enumerate(order)}
    members = [(m[0], m[1], renumber.get(m[2], m[2]), *m[3:]) for m in members]
    profile = _PROFILES[speculative]
    groups = tuple(_cycle(key, cycles[key][1], profile) for key in order)
    return manager, tuple(members), tuple(states), tuple(crosses), groups


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
    ranked: tuple[_OnRank, ...] = ()
    for manager in layers:
        ranked += (_on_rank(manager, window, last, tp_size),)
    if dcp != 1:  # each DCP rank holds one token in dcp of full attention (§9)
        ranked = tuple([(r[0], _dcp_slope(r[0], r[1], dcp), *r[2:]) for r in ranked])
    if len(_RANKS) >= 4096:  # bounded like the answers cache
        _RANKS.clear()
    _RANKS[model, speculative, pp_size, pp_rank, tp_size, dcp] = ranked
    return ranked


def _on_rank(layers: _Layers, window: tuple[int, int, int] | None, last: bool, tp: int) -> _OnRank:
    """One manager's layers summed on a rank at tp: the model's layers in the rank's
    ``window`` (None: a single rank, every layer), draft and extra layers on the ``last``
    rank; each kind's bytes per token from its member's ints (§1, §3). One loop of
    arithmetic, no comprehension or call per kind: it is most of a new split's cost."""
    manager, members, state_members, cross_members, groups = layers
    slope = 0
    cycles = [0] * len(groups)
    distinct: list[tuple[int, ...]] = [()] * len(groups)  # b_l once per cycle
    for before, count, slot, kv_heads, per_head, fixed, scaled in members:
        if before is None:
            if not last:
                continue
        elif window is not None:  # _count_in, inline
            start, end, laps = window
            period = len(before) - 1
            if end <= period:
                count = laps * before[period] + before[end] - before[start]
            else:
                count = (laps + 1) * before[period] - before[start] + before[end - period]
        if not count:
            continue
        bpt = fixed + -(-kv_heads // tp) * per_head if scaled is None else scaled(tp)
        if slot == _FULL:
            slope += count * bpt
        else:
            cycles[slot] += count * bpt
            if bpt not in distinct[slot]:
                distinct[slot] += (bpt,)  # scratch reuse grows one layer per (w, b_l)
    on_rank: _CyclesOnRank = ()
    for i, seen in enumerate(distinct):  # not zip(strict=True): its keyword call costs more
        if seen:  # a life cycle this rank holds layers of
            on_rank += ((groups[i], cycles[i], sum(seen)),)
    states = _held_rows(state_members, window, last) if state_members else ()
    crosses = _held_rows(cross_members, window, last) if cross_members else ()
    sums = _state_at_tp(states, tp) if states else _NO_STATE
    cross_bytes = _cross_bytes(crosses, tp, None) if crosses else 0  # type: ignore[arg-type]
    return manager, slope, sums, on_rank, states, crosses, cross_bytes  # type: ignore[return-value]


def _held_rows(
    members: tuple[_RowMember, ...], window: tuple[int, int, int] | None, last: bool
) -> tuple[tuple[int, ...], ...]:
    """Recurrent or cross members on a rank as rows led by their layer count there."""
    rows: tuple[tuple[int, ...], ...] = ()
    for before, count, row in members:
        if before is None:
            if not last:
                continue
        elif window is not None:
            count = _count_in(before, window)
        if count:
            rows += ((count, *row),)
    return rows


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
        if heads % tp_size:  # the heads' name only for the refusal: a split pays no call
            raise ValueError(uneven_state(tp_size, state_heads_name(groups, d_conv), heads))
        if conv_dim % tp_size:
            raise ValueError(uneven_state(tp_size, "conv_dim", conv_dim))
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
