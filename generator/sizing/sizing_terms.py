"""The named terms of one sizing call, per cache manager and life cycle (docs/cost-model.md
§3, §4, §8; docs/api.md, "Terms"), from the sums of its split (``sizing_split``). Part of the
interpreter ``sizing_core`` binds.
"""

import math
from typing import Any, NamedTuple

from .facts import float32
from .sizing_kinds import _PROFILES, TOKENS_PER_BLOCK, CacheCost, Profile, _new
from .sizing_options import _Options
from .sizing_split import (
    _RANKS,
    _cross_bytes,
    _CyclesOnRank,
    _rank,
    _StateSums,
)

__all__: list[str] = []

_TERM_NAMES = (
    "slope",
    "per_request",
    "ctx_swa",
    "full_page_rounding",
    "context_page_rounding",
    "resume_rounding",
    "intercept",
)


class _Terms(NamedTuple):
    """One manager's named terms of §4 (docs/api.md, "Terms"); the rounding terms are None
    where they do not apply."""

    manager: str
    slope: int
    per_request: int
    ctx_swa: int
    full_page_rounding: int | None
    context_page_rounding: int | None
    resume_rounding: int | None
    intercept: int
    # SWA and chunked: (window, sinks, pages, b_l sum, chunk (0: SWA))
    life_cycles: tuple[tuple[int, int, int, int, int], ...]
    # "exact": bytes of the pools that do not grow with T, and per growing pool (bytes per
    # page, the T its growth stops at (-1: never), tokens its pages are rounded up with).
    fixed_pool_bytes: int
    pools: tuple[tuple[int, int, int], ...]
    states: tuple[tuple[str, int], ...]  # recurrent rows beyond one per request (§8)
    # Tokens one page of the growing pools spans: tpb, or tpb * dcp_size under decode context
    # parallelism, where a full-attention page holds tpb tokens on each DCP rank (§9).
    span: int


# What one computation answers: each manager's terms, and each manager's CacheCost.
_Answer = tuple[tuple[_Terms, ...], dict[str, CacheCost]]


def _compute(options: _Options, named: bool = True) -> _Answer:
    """Every named term of the static cost per manager (§3, §4) for validated options, and
    the CacheCost of each (built here, so that a never-seen ``cache_costs`` call runs one
    function): per manager, its layers on the rank (``sizing_split._rank``), then its full
    pool, cross attention and recurrent slot per request, its life cycles (``_life_cycles``),
    the "exact" page roundings, the resume watermark of a single SWA draft pool and the
    recurrent rows beyond one per request (``_state_rows``). ``named`` False: the CacheCosts
    alone (no terms built: what a never-seen ``cache_costs`` call reads)."""
    (model, speculative, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank, scratch_reuse,
     block_reuse, util, overlap_slack, semantics, attention_dp, update, dcp, encoder_tokens,
     ) = options  # fmt: skip
    if attention_dp:
        tp_size = 1  # attention-DP: every rank holds whole KV heads and whole states (§9)
    key = (model, speculative, pp_size, pp_rank, tp_size, dcp)
    # .get, not try/except KeyError: a raised KeyError costs more than a new split's sums.
    ranked = _RANKS.get(key)
    if ranked is None:
        ranked = _rank(*key)
    exact = semantics == "exact"
    tpb = TOKENS_PER_BLOCK
    span = tpb * dcp  # DCP: one page of tpb tokens on each DCP rank spans tpb * dcp tokens (§9)
    headroom = 2 * overlap_slack + block_reuse  # which of ``sizing_split._cycle``'s variants
    terms = []
    costs = {}
    for name, slope, sums, groups, states, crosses, cross_bytes in ranked:
        per_request = state = sums[0]
        if crosses:  # cross-attention: fixed per request, whole pages (§4)
            per_request += (
                _cross_bytes(crosses, tp_size, encoder_tokens) if encoder_tokens else cross_bytes
            )
        fixed_pool_bytes = batch * per_request
        ctx_swa = ctx_rounding = 0
        pools: tuple[tuple[int, int, int], ...] = ()
        cycles: tuple[tuple[int, int, int, int, int], ...] = ()
        if groups:
            scratch = scratch_reuse and name == "target"  # scratch reuse: targets only (§3)
            as_full, held, ctx_swa, ctx_rounding, fixed, pools, cycles = _life_cycles(
                groups, headroom, scratch, exact, batch, chunk, max_seq_len
            )
            slope += as_full
            per_request += held
            fixed_pool_bytes += fixed
        intercept = batch * per_request + chunk * ctx_swa
        full_rounding = resume_rounding = None
        if exact:
            if slope:  # full attention: ceil((T + B*(span-1))/span) pages, uncapped (§3)
                pools += ((span * slope, -1, batch * (span - 1)),)
            full_rounding = batch * (span - 1) * slope
            ctx_rounding *= min(batch, chunk) * (tpb - 1)
            intercept += full_rounding + ctx_rounding
        if name == "draft" and len(cycles) == 1 and not (slope or state or crosses):
            resume_rounding = _resume_rounding(intercept, tpb * cycles[0][3], util)
            intercept += resume_rounding
        recurrent: tuple[tuple[str, int], ...] = ()
        if states:
            recurrent = _state_rows(sums, batch, _PROFILES[speculative], attention_dp, update)
            for _term, value in recurrent:  # the reserved and speculative rows are fixed (§8)
                intercept += value
                fixed_pool_bytes += value
        costs[name] = _new(CacheCost, (slope, intercept))
        if named:
            context_rounding = ctx_rounding if exact else None
            values = (name, slope, per_request, ctx_swa, full_rounding, context_rounding,
                      resume_rounding, intercept, cycles, fixed_pool_bytes, pools, recurrent,
                      span)  # fmt: skip
            terms.append(_new(_Terms, values))
    return tuple(terms), costs


# What a manager's sliding and chunked life cycles add (``_life_cycles``): bytes per token of
# those that reach max_seq_len (full attention, §1); bytes a request keeps on the others;
# their context bytes per token; under "exact" the context bytes whose chunk needs a rounding,
# their fixed pool bytes and their growing pools; each one's row of ``_Terms.life_cycles``.
_Cycles = tuple[int, int, int, int, int, tuple[tuple[int, int, int], ...], tuple[Any, ...]]


def _life_cycles(
    groups: _CyclesOnRank,
    headroom: int,
    scratch: bool,
    exact: bool,
    batch: int,
    chunk: int,
    max_seq_len: int,
) -> _Cycles:
    """A manager's sliding and chunked life cycles on a rank (``sizing_split._cycle`` holds
    each one's retention and pages under the options' headroom, §3, §4)."""
    tpb = TOKENS_PER_BLOCK
    as_full = held = ctx_swa = ctx_rounding = fixed = 0
    pools = []
    cycles = []
    for (_window, sinks, attn_chunk, reuses, variants), cycle, distinct in groups:
        window, pages, rounds = variants[headroom]
        if window >= max_seq_len:
            as_full += cycle  # a window or chunk that reaches S is full attention (§1)
            continue
        held += pages * tpb * cycle
        ctx = distinct if scratch and reuses else cycle
        ctx_swa += ctx
        if exact:  # whole pages of every pool as the shim builds them for T (§3, §4)
            # A context chunk rounds its pages up; unless the headroom already reserves a
            # spare page (pages(w, H) > pages(w, E)), "exact" charges tpb-1 tokens more (§4).
            rounding = 0
            if rounds:
                ctx_rounding += ctx
                rounding = min(batch, chunk) * (tpb - 1)
            fixed += batch * pages * tpb * cycle
            pools.append((tpb * ctx, chunk, rounding))
        cycles.append((window, sinks, pages, cycle, attn_chunk))
    return as_full, held, ctx_swa, ctx_rounding, fixed, tuple(pools), tuple(cycles)


def _resume_rounding(intercept: int, slot: int, util: float) -> int:
    """Resume watermark (§4): a single SWA pool rounded up so that a suspended request can
    resume under max_util_for_resume, which the engine compares as a float32."""
    util32 = float32(util)
    return math.ceil(-(-intercept // slot) / util32) * slot - intercept


def _state_rows(
    sums: _StateSums, batch: int, profile: Profile, attention_dp: bool, update: str
) -> tuple[tuple[str, int], ...]:
    """The recurrent rows the engine keeps beyond one per request (§8): one slot shared by the
    CUDA-graph padding dummies (+1 for the attention-DP dummy), and under speculative decoding
    B intermediate conv windows of T = K + 1 steps with either T SSM states (default) or a
    double-buffered replay history of max(16, T) steps per slot (replay)."""
    state, conv, ssm, replay = sums
    reserved = 1 + attention_dp
    first = ("state_reserved_rows", reserved * state)
    if profile.mode == "none":
        return (first,)
    step = profile.draft_len + 1 if profile.mode == "pard" else profile.step  # T
    if update == "replay":
        history = max(16, step)
        return (
            first,
            ("spec_intermediate_states", batch * step * conv),
            ("spec_replay_history", (batch + reserved) * 2 * history * replay),
        )
    return (first, ("spec_intermediate_states", batch * step * (conv + ssm)))


def _cached_terms(options: _Options) -> tuple[_Terms, ...]:
    """Each manager's terms for validated options, from the answers cache."""
    return (_ANSWERS.get(options) or _answers(options))[0]


def _answers(options: _Options) -> _Answer:
    """``_compute``'s answer for validated options through the answers cache, one per family
    (``_derive_answers``): a plain dict, emptied when full (4,096 answers), which a hit reads
    with one ``.get`` (the public functions read it so; a functools.lru_cache call costs a
    tenth of a warm call more)."""
    answer = _ANSWERS.get(options)
    if answer is None:
        if len(_ANSWERS) >= _ANSWERS_HELD:
            _ANSWERS.clear()
        answer = _ANSWERS[options] = _compute(options)
    return answer


_ANSWERS_HELD = 4096
_ANSWERS: dict[_Options, _Answer] = {}


def _derive_answers() -> None:
    """Per family, at bind (``sizing_core._derive``): an empty answers cache over the
    family's ``_compute``, a pure function of validated options (plain values: 1, 1.0 and
    True never reach it alike)."""
    global _ANSWERS
    _ANSWERS = {}
