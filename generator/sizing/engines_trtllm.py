"""TensorRT-LLM V2's answer for ``engine_capacity`` (docs/cost-model.md §4): the engine's own
split of the target's share into pool groups (``trtllm_plans``, ``trtllm_held``, public for
kvgen's plan and launch settings), or the interpreter's affine estimate where that split is
not modelled."""

import types
from functools import lru_cache
from typing import Any, cast

# 38198e34's splits: a function of another module, shared with every family as a value
from ._trtllm_pools import SplitFrame, split_frame, split_slots
from .engines_rows import (
    _MIXERS,
    ENGINE_MODELS,
    UNMODELLED,
    EngineCapacity,
    NotModelled,
)
from .sizing_kinds import _MODELS, _PROFILES, TOKENS_PER_BLOCK, _new
from .sizing_options import (
    _BATCH_AT,
    _CHUNK_AT,
    _MAX_INT,
    _ONE,
    _SEQ_LEN_AT,
    _ZERO,
    _integer,
    _Options,
    _options,
    _plain_options,
)
from .sizing_quota import _shares, _tokens
from .sizing_split import _RANKS, _rank
from .sizing_terms import _answers, _cached_terms, _compute, _state_rows, _Terms
from .trtllm_split import PoolGroup, TrtllmPlan, slots_for_quota, whole_grains

# By the arguments of a call of one stage whose four sizes are ints of type int (the model,
# profile, batch, chunk, max_seq_len and tp as given), else by the identity of its terms
# (the answers cache's, one object per validated options, kept in the entry so that a reused
# id never matches): those terms, every manager's TensorRT-LLM V2 pool groups, the target's
# request bytes and its tokens by share (``_trtllm_known``).
_TrtllmKnown = tuple[
    tuple[_Terms, ...], tuple["TrtllmPlan | None", ...], int, dict[int, int | None]
]
_TRTLLM_PLANS: dict[object, _TrtllmKnown]
# ``_trtllm_given`` of a call's arguments as given (typed: 1, 1.0 and True are three keys).
_TRTLLM_GIVEN: Any
# Per model: its query heads (TensorRT-LLM refuses a tp they do not divide by), or the
# UNMODELLED reason of a model whose row TensorRT-LLM does not answer (``_derive_trtllm``).
_TRTLLM_HEADS: dict[str, int | str]
# The budget-free part of a per-request release's split (``_trtllm_pools.SplitFrame``; None:
# not modelled, the early answer stands) by (release, model, profile, max_seq_len, tp) as given.
_TRTLLM_FRAMES: dict[tuple[Any, ...], SplitFrame | None]
# ``_TRTLLM_PLANS``' one-stage entry and its batch by the key less the batch; batch 0 where
# the terms move otherwise than in B * per-request bytes and recurrent rows (a resume
# watermark: ``_trtllm_rebatched``).
_TRTLLM_BASE: dict[tuple[Any, ...], tuple[_TrtllmKnown, int]]


def _trtllm_capacity(
    model: str,
    budget_bytes: int,
    max_seq_len: int,
    max_num_tokens: int,
    block_size: int | None,
    speculative: str,
    tp_size: int,
    max_batch_size: int,
    pp_size: int = 1,
    pp_rank: int = 0,
    release: str | None = None,
) -> EngineCapacity:
    """What TensorRT-LLM V2 holds for pipeline rank ``pp_rank`` of ``pp_size`` (its own
    layers in its own budget): the tokens of the pools the engine's own split builds from
    the target's share in whole grains (what ``plan --emit trtllm`` hands it), or the affine
    estimate of §4 where that split is not modelled (recurrent, cross or DCP pools). With
    ``release`` (the version of a release that splits per request, one stage), the tokens of
    that release's split of the whole budget (``_trtllm_split_tokens``) where it is modelled;
    every argument checked and every refusal raised as without it."""
    # 0 for a value that is no model of the tables: ``_options`` names it below.
    heads = _TRTLLM_HEADS.get(model, 0) if type(model) is str else 0
    if type(heads) is str:
        raise NotModelled(f"{model}: {UNMODELLED[heads]}", heads)
    if heads and type(tp_size) is int and tp_size > 0 and heads % tp_size:
        # KV heads are replicated up to tp (the ceil of §1); query heads are not.
        raise ValueError(
            f"TensorRT-LLM refuses tp_size {tp_size}: the model's {heads} query heads must "
            "divide by it (tensorrt_llm/_torch/modules/attention.py asserts "
            "num_heads % tp_size == 0)"
        )
    if block_size is not None and (type(block_size) is not int or block_size != TOKENS_PER_BLOCK):
        _integer("block_size", block_size, 1)
        raise NotModelled(
            f"block_size must be {TOKENS_PER_BLOCK} (the spec's tokens_per_block) for "
            f"engine 'trtllm-v2' here; kvgen.engine_capacity (from the spec) answers for other "
            "page sizes"
        )
    if (
        pp_size is _ONE and pp_rank is _ZERO and type(max_batch_size) is int
        and type(max_num_tokens) is int and type(max_seq_len) is int and type(tp_size) is int
    ):  # fmt: skip
        # One stage and sizes of type int (no bool, float or numpy int equals one here): the
        # plans looked up by the arguments as given, which a hit needs no validation of
        # (their validated values are themselves); validated on a miss.
        key = (model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size)
        try:
            known = _TRTLLM_PLANS.get(key)
        except TypeError:  # an unhashable argument: named as any other bad value
            _options(model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size)
            raise
        if known is None:
            other = (model, speculative, max_num_tokens, max_seq_len, tp_size)  # any batch
            base = _TRTLLM_BASE.get(other)
            if base is not None and base[1] and 0 < max_batch_size <= _MAX_INT:
                known = _trtllm_rebatched(base, max_batch_size, max_num_tokens, key)
            else:
                options = _plain_options(model, speculative, max_batch_size, max_num_tokens,
                                         max_seq_len, tp_size)  # fmt: skip
                # The terms computed here alone (not kept in the answers cache: the plans do).
                known = _trtllm_known(options, _compute(options)[0], key)
                if base is None:  # batch 0: terms that move otherwise (never rebatched)
                    if len(_TRTLLM_BASE) >= 4096:
                        _TRTLLM_BASE.clear()
                    moves = all(t.resume_rounding is None for t in known[0])
                    _TRTLLM_BASE[other] = (known, max_batch_size if moves else 0)
    else:
        # The validated options and terms of these arguments (looked up as given: validated
        # on a miss), then their plans by the terms' identity (a look-up of an int).
        try:
            options, answered = _TRTLLM_GIVEN(model, speculative, max_batch_size,
                                              max_num_tokens, max_seq_len, tp_size, pp_size,
                                              pp_rank)  # fmt: skip
        except TypeError:  # an unhashable argument: named as any other bad value
            _options(model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size,
                     pp_size, pp_rank)  # fmt: skip
            raise
        known = _TRTLLM_PLANS.get(id(answered))
        if known is None or known[0] is not answered:
            known = _trtllm_known(options, answered, id(answered))
        max_batch_size, max_num_tokens = options[_BATCH_AT], options[_CHUNK_AT]
        max_seq_len = options[_SEQ_LEN_AT]
        if release is not None:  # the split's frame is keyed by validated values
            model, speculative, tp_size, pp_size = options[0], options[1], options[5], options[6]
    terms, plans, request_bytes, held = known
    budget = whole = budget_bytes
    if type(budget) is not int or not 0 < budget <= _MAX_INT:
        budget = whole = _integer("budget_bytes", budget_bytes, 1)
    target = terms[0]
    if len(terms) > 1:  # a separate draft pool takes its share first (§6)
        budget = _shares(terms, budget, "gpu")["target"]
    tokens = held.get(budget, -1) if release is None else -1
    if tokens == -1:  # a share not seen with these options
        plan = plans[0]  # None: recurrent, cross or fixed pools lie outside the engine's split
        if plan is None:  # pools outside the engine's split: the affine estimate
            tokens = _tokens(target, budget, max_num_tokens)
        else:  # the engine's split of the share
            # trtllm_held, its frame saved: the slots of the share's whole grains, then T
            slots = _engine_slots(plan.pools, _whole_grains(budget))  # or its refusal
            if release is not None and pp_size == 1:
                tokens = _trtllm_split_tokens(release, model, speculative, max_seq_len,
                                              tp_size, known, whole)  # fmt: skip
            if tokens == -1:  # the early-2026 split (not modelled for the release's own)
                tokens = trtllm_held_in(plan, slots)[0]
        if release is None:
            if len(held) >= 64:
                held.clear()
            held[budget] = tokens
    if tokens is None:  # nothing grows with history: every request reaches max_seq_len
        tokens = max_batch_size * max_seq_len
    concurrency = tokens / max_seq_len
    if concurrency > max_batch_size:  # at most B requests are resident, whatever the tokens
        concurrency = float(max_batch_size)
    capacity: EngineCapacity = _new(
        EngineCapacity, (tokens, concurrency, request_bytes, tokens // TOKENS_PER_BLOCK)
    )
    return capacity


# ``whole_grains`` remembered: a function of the share alone; its two logarithms cost most.
_whole_grains = lru_cache(maxsize=4096)(whole_grains)


def trtllm_plans(
    model: str,
    *,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    speculative: str = "none",
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
) -> dict[str, "TrtllmPlan | None"]:
    """Per cache manager, TensorRT-LLM V2's pool groups for these options, the ones
    ``engine_capacity(engine="trtllm-v2")`` splits a share over (``trtllm_held``: what they
    hold for a quota); None for a manager whose pools lie outside the engine's split
    (recurrent states, cross caches, DCP or resume-rounded pages). ValueError naming a bad
    argument, as ``cache_costs``."""
    options = _options(model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size,
                       pp_size, pp_rank)  # fmt: skip
    terms = _cached_terms(options)
    known = _TRTLLM_PLANS.get(id(terms))
    if known is None or known[0] is not terms:
        known = _trtllm_known(options, terms, id(terms))
    return {t.manager: plan for t, plan in zip(terms, known[1], strict=True)}


def _trtllm_given(
    model: object, speculative: object, batch: object, chunk: object, max_seq_len: object,
    tp_size: object, pp_size: object, pp_rank: object,
) -> tuple[_Options, tuple[_Terms, ...]]:  # fmt: skip
    """The validated options of ``_trtllm_capacity``'s arguments and their terms."""
    options = _options(model, speculative, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank)
    return options, _answers(options)[0]


def _trtllm_known(options: _Options, terms: tuple[_Terms, ...], key: object) -> _TrtllmKnown:
    """``_TRTLLM_PLANS``' entry of validated options and their terms, built and kept under
    ``key``: each manager's ``TrtllmPlan`` (None where the split is not modelled)."""
    batch, chunk = options[_BATCH_AT], options[_CHUNK_AT]
    plans: tuple[TrtllmPlan | None, ...] = ()
    for t in terms:  # a loop, not a comprehension: its frame costs a never-seen call more
        plans += (_trtllm_plan(t, batch, chunk),)
    # What ``_trtllm_capacity`` reads beside the plans, so that a warm call makes one
    # look-up: the terms, the bytes of one target request at max_seq_len, and the
    # target's tokens for each share seen (a function of the share and these options).
    target, seq_len = terms[0], options[_SEQ_LEN_AT]
    request_bytes = (seq_len * target.slope + target.per_request
                     + min(seq_len, chunk) * target.ctx_swa)  # fmt: skip
    if len(_TRTLLM_PLANS) >= 4096:
        _TRTLLM_PLANS.clear()
    known = _TRTLLM_PLANS[key] = (terms, plans, request_bytes, {})
    return known


def _trtllm_rebatched(
    base: tuple[_TrtllmKnown, int], batch: int, chunk: int, key: object
) -> _TrtllmKnown:
    """``_trtllm_known`` at ``batch`` from its entry at another batch (plain options of one
    stage, no resume watermark): only ``_compute``'s B * per-request bytes move (intercept =
    B * per_request + chunk * ctx_swa, fixed pool bytes B * cross bytes) and the recurrent
    rows beyond one per request (``_state_rows`` of the same sums, ``_RANKS``' entry)."""
    (terms, plans, request_bytes, _held), was = base
    rebatched: tuple[_Terms, ...] = ()
    ranked: Any = None
    for i, t in enumerate(terms):  # loops, not comprehensions: their frames cost more
        (
            name,
            slope,
            per_request,
            ctx_swa,
            full,
            ctx,
            resume,
            _,
            cycles,
            fixed,
            pools,
            states,
            span,
        ) = t
        if states:  # the rows beyond one per request at ``batch`` (§8), by the same function
            if ranked is None:
                split = (key[0], key[1], 1, 0, key[5], 1)  # type: ignore[index]
                ranked = _RANKS.get(split) or _rank(*split)
            held = rows = 0
            for _row, value in states:
                held += value
            states = _state_rows(ranked[i][2], batch, _PROFILES[split[1]], False, "default")
            for _row, value in states:
                rows += value
            fixed = (fixed - held) // was * batch + rows
            t = _new(_Terms, (name, slope, per_request, ctx_swa, full, ctx, resume,
                              batch * per_request + chunk * ctx_swa + rows, cycles, fixed,
                              pools, states, span))  # fmt: skip
        elif per_request or fixed:  # else the same terms: intercept N * ctx_swa, no fixed pool
            t = _new(_Terms, (name, slope, per_request, ctx_swa, full, ctx, resume,
                              batch * per_request + chunk * ctx_swa, cycles,
                              fixed // was * batch, pools, states, span))  # fmt: skip
        rebatched += (t,)
    moved: tuple[TrtllmPlan | None, ...] = ()
    for p in plans:
        moved += (p and _new(TrtllmPlan, (p[0], p[1], batch, p[3], p[4], p[5])),)
    if len(_TRTLLM_PLANS) >= 4096:
        _TRTLLM_PLANS.clear()
    known = _TRTLLM_PLANS[key] = (rebatched, moved, request_bytes, {})
    return known


def _trtllm_plan(t: _Terms, batch: int, chunk: int) -> TrtllmPlan | None:
    """A manager's pool groups (``_trtllm_groups``, remembered by its life cycles) with the
    batch and chunk of a call; None where the engine's split does not hold its pools (states,
    cross caches, DCP pages, a resume-rounded draft). Not itself remembered: building the plan
    costs less than hashing its life cycles once more, and a new batch size would miss."""
    tpb = TOKENS_PER_BLOCK
    if t.states or t.fixed_pool_bytes or t.resume_rounding is not None or t.span != tpb:
        return None
    slope = t.slope
    groups = _trtllm_groups(t.life_cycles, slope, t.per_request, tpb)
    if groups is None:
        return None
    members, pools = groups  # a starred tuple display builds a list first: slower
    plan: TrtllmPlan = _new(TrtllmPlan, (members, pools, batch, -(-chunk // tpb), chunk, slope > 0))
    return plan


@lru_cache(maxsize=4096)  # a function of its arguments alone: one cache serves every family
def _trtllm_groups(
    cycles: tuple[tuple[int, int, int, int, int], ...], slope: int, per_request: int, tpb: int
) -> tuple[tuple[Any, ...], tuple[PoolGroup, ...]] | None:
    """Life cycles of equal slot bytes share a pool group (a chunked one keeps its own, as
    the shim builds it), in registry order: sliding and chunked cycles, then full; per group
    (slot bytes, cycles, pages per request, sliding cycles, full cycles), and the groups as
    the engine's split sees them. None for a per-request state beside the pages, or no page
    that grows with history (nothing to split: the affine answer)."""
    # slot bytes, or a chunked cycle's own key -> [slot bytes, cycles, pages, sliding, full]
    groups: dict[int, list] = {}  # type: ignore[type-arg]
    window_bytes = 0  # kvgen's window pages of one request
    for i, (window, sinks, pages, b, attn_chunk) in enumerate(cycles):
        size = tpb * b
        window_bytes += size * pages
        key = -i - 1 if attn_chunk else size
        group = groups.get(key)
        if group is None:
            group = groups[key] = [size, [], 0, 0, 0]
        group[1].append((window, sinks, attn_chunk))
        group[2] += pages
        group[3] += 1
    if per_request != window_bytes:  # a per-request state beside the pages: not split
        return None
    if slope:
        group = groups.get(tpb * slope)
        if group is None:
            group = groups[tpb * slope] = [tpb * slope, [], 0, 0, 0]
        group[1].append((0, 0, 0))
        group[4] += 1
    if not groups:  # no page grows with history: nothing to split (the affine answer)
        return None
    members = []
    pools = []
    for size, members_of, pages, sliding, full in groups.values():
        members.append((size, tuple(members_of), pages, sliding, full))
        pools.append(_new(PoolGroup, ((size,), len(members_of))))
    return tuple(members), tuple(pools)


@lru_cache(maxsize=4096)
def _engine_slots(pools: tuple[PoolGroup, ...], quota: int) -> tuple[int, ...]:
    """The slots the engine's split of ``quota`` builds per pool group: a function of the
    slot bytes and the quota alone (no family table), so one cache serves every family."""
    try:
        return slots_for_quota(quota, pools)
    except ValueError:
        raise ValueError(
            f"TensorRT-LLM V2 cannot build its {len(pools)} pool groups from a quota of "
            f"{quota} B: its least grain per pool overruns it (the engine asserts)"
        ) from None


def trtllm_held(plan: TrtllmPlan, quota: int) -> tuple[int | None, tuple[int, ...], int]:
    """What the engine's pools for ``quota`` bytes hold (§4): the slots its split builds per
    group, and the largest T, a multiple of tpb, whose kvgen pools fit them all: k =
    ceil(T/tpb) full pages and, per sliding cycle, B * pages(w, H) + min(k, n) (T None when
    no full pool bounds it; 0 when not even B requests' window pages fit). Returns (T,
    slots, k); ValueError where the engine's least grains per pool overrun the quota."""
    slots = _engine_slots(plan.pools, quota)
    return trtllm_held_in(plan, slots)


def trtllm_held_in(
    plan: TrtllmPlan, slots: tuple[int, ...]
) -> tuple[int | None, tuple[int, ...], int]:
    """``trtllm_held`` for the ``slots`` built per group of ``plan`` (in its group order),
    whichever split built them."""
    context, batch = plan.context, plan.batch
    most = -1  # the largest k every group allows (-1: no group bounds it)
    # not zip(strict=True): its keyword call costs more (a slot count per group, by its index)
    for i, (_size, _cycles, pages, sliding, full) in enumerate(plan.groups):
        room = slots[i] - batch * pages
        if room < 0:
            return 0, slots, 0  # not even B requests' window pages: nothing is served
        if full:  # k <= n: (sliding + 1) k <= room; past n: k <= room - sliding * n
            k = room // (sliding + 1)
            if k >= context:
                k = room - sliding * context
        elif room >= sliding * context:
            continue  # every context page fits: this group never bounds k
        else:
            k = room // sliding
        if most < 0 or k < most:
            most = k
    if most < 0:
        return None, slots, context
    if plan.grows:
        return most * TOKENS_PER_BLOCK, slots, most
    tokens = min(most * TOKENS_PER_BLOCK, plan.chunk - 1)  # no full pool: pages below N
    return tokens, slots, -(-tokens // TOKENS_PER_BLOCK)


def _trtllm_refusal(name: str) -> str:
    """The UNMODELLED reason of a model TensorRT-LLM's row does not answer, or ""."""
    if any(kind.attention == "cross" for kind in _MODELS[name].layers.kinds.values()):
        return "cross"
    for lay in ENGINE_MODELS[name].layers:
        if _MIXERS[lay.mixer].trtllm_unmodelled:
            return _MIXERS[lay.mixer].trtllm_unmodelled
    return ""


def _derive_trtllm() -> None:
    """Per family, at bind: its own TensorRT-LLM plans, and each model's query heads or the
    reason its row has no answer."""
    global _TRTLLM_HEADS, _TRTLLM_PLANS, _TRTLLM_GIVEN, _TRTLLM_FRAMES, _TRTLLM_BASE
    _TRTLLM_HEADS = {name: _trtllm_refusal(name) or ENGINE_MODELS[name].query_heads
                     for name in _MODELS}  # fmt: skip
    _TRTLLM_PLANS = {}
    _TRTLLM_GIVEN = lru_cache(maxsize=4096, typed=True)(_trtllm_given)
    _TRTLLM_FRAMES = {}
    _TRTLLM_BASE = {}


class _Namespace:
    """A family's namespace read as its sizing module (what ``_trtllm_pools`` takes)."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.__dict__ = namespace


def _trtllm_split_tokens(
    version: str, model: str, speculative: str, max_seq_len: int, tp_size: int,
    known: _TrtllmKnown, budget: int,
) -> int | None:  # fmt: skip
    """The target's tokens (None: nothing grows with them) in the pools a per-request release
    builds from ``budget`` with the settings ``trtllm_emit`` writes, for the terms and plans
    ``known`` of one call (validated values); -1 where its split is not modelled."""
    terms, plans = known[0], known[1]
    target = plans[0]
    if target is None or None in plans:
        return -1
    key = (version, model, speculative, max_seq_len, tp_size)
    frame = _TRTLLM_FRAMES.get(key, _NO_FRAME)
    if frame is _NO_FRAME or (frame is not None and frame.target.groups is not target.groups
                              and frame.target.groups != target.groups):  # fmt: skip
        frame = split_frame(
            cast(types.ModuleType, _Namespace(globals())), model, plans,
            [t.manager for t in terms], revision=version, max_batch_size=target.batch,
            max_num_tokens=target.chunk, max_seq_len=max_seq_len, speculative=speculative,
            tp_size=tp_size,
        )  # fmt: skip
        if len(_TRTLLM_FRAMES) >= 4096:
            _TRTLLM_FRAMES.clear()
        _TRTLLM_FRAMES[key] = frame
    if frame is None:
        return -1
    slots = split_slots(frame, plans, terms, budget, TOKENS_PER_BLOCK)
    if slots is None:
        return -1
    return trtllm_held_in(target, slots)[0]


_NO_FRAME: Any = object()  # ``_TRTLLM_FRAMES`` holds no entry
