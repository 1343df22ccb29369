"""The sizing interpreter: the one static cost model, shared by every generated sizing module.

``kvgen generate`` writes this file verbatim into the output folder
(``generated/_kvgen_runtime/sizing_core.py``); each ``generated/<family>/sizing.py`` holds only
its family's tables (plain rows of the spec's facts: layer kinds with their layer counts,
patterns, speculative profiles) and calls ``bind``, which installs the interpreter over them.
So the modules stay stdlib-only and need no kvgen at run time: vendoring is copying the output
folder. kvgen binds the same interpreter to tables built in memory from a spec
(``kvgen.sizing_context.bound_module``). The formulas are those of ``docs/cost-model.md``
§1-§6; the runtime page model (``kvgen.runtime``) derives the same numbers independently.
"""

# No `from __future__ import annotations`: NamedTuple would turn every string annotation into
# a compiled ForwardRef at import, which costs more than the rest of the import together.
import functools
import itertools
import math
import operator
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from .facts import (
    DCP_ATTENTION,
    DTYPE_BYTES,
    SCALED_LAYOUTS,
    dcp_attention,
    dcp_heads,
    dcp_outside_tp,
    dcp_with_attention_dp,
    float32,
    kv_sharing_rank,
    no_encoder,
    state_heads_name,
    uneven_state,
)
from .trtllm_split import PoolGroup, least_quota

__all__ = [
    "API_VERSION",
    "FAMILY",
    "MANAGERS",
    "MAX_SEQ_LEN",
    "MODELS",
    "PROFILES",
    "SEMANTICS",
    "SPECULATIVE",
    "SPEC_SHA256",
    "TIERS",
    "TOKENS_PER_BLOCK",
    "CacheCost",
    "cache_costs",
    "cost_terms",
    "headroom",
    "max_blocks_per_seq",
    "max_tokens_from_quota",
    "pages_per_request",
    "quota_for_requests",
    "quota_from_max_tokens",
    "split_budget",
]

# 2: model first everywhere (split_budget(model, budget_bytes)); max_tokens_from_quota takes and
# returns per-manager dicts like quota_from_max_tokens. Modules without API_VERSION are 1.
API_VERSION = 2
SEMANTICS = ("trtllm-v2", "exact")
_UTIL = 0.95  # the default max_util_for_resume
TIERS = ("gpu", "host")
MAMBA_STATE_UPDATES = ("default", "replay")


class CacheCost(NamedTuple):
    """``cost(T) = slope * T + intercept``: bytes per token of full-attention history, bytes."""

    slope: int
    intercept: int


class _Record:
    """Named fields compared, hashed and printed by value like a NamedTuple's, for the engine
    rows of ``engines_core``; rows are never changed after they are built."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()  # in the constructor's order, as NamedTuple's

    def _values(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Record) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join([f"{name}={getattr(self, name)!r}" for name in self._fields])
        return f"{type(self).__name__}({fields})"


class Kind(NamedTuple):
    """One layer kind of a stack and how many of the stack's layers have it (§1, §8; the
    fields are described in docs/api.md, "Interpreter tables")."""

    attention: str  # "full", "sliding", "recurrent", "none", "cross" or "chunked"
    layers: int
    window: int | None = None  # None for full attention
    sink_tokens: int = 0
    kv_heads: int = 0  # 0: a shape tp does not split (MLA latent, raw bytes): bytes_per_token
    head_dim: int = 0
    dtype: str = ""
    bytes_per_token: int = 0
    extra_bytes_per_token: int = 0
    state_bytes: int = 0  # a recurrent state known by its bytes, per request per layer at tp=1
    ssm_heads: int = 0  # a recurrent state by its dimensions (§8)
    ssm_head_dim: int = 0
    d_state: int = 0
    n_groups: int = 0
    d_conv: int = 0
    ssm_dtype: str = ""
    reads: int | None = None  # KV sharing: the layer whose cache these read; none own (§1)
    encoder_tokens: int = 0  # cross-attention: encoder tokens cached per request (§4)
    chunk: int = 0  # chunked local attention: tokens per attention chunk (§3)
    v_head_dim: int = 0  # V's head size where it differs from K's head_dim (0: the same)


class Stack(NamedTuple):
    """``layer_count`` layers whose kinds repeat ``pattern`` cyclically; layer i keeps its
    kind on every pipeline rank (§1)."""

    layer_count: int
    pattern: tuple[str, ...]
    kinds: dict[str, Kind]


class Model(NamedTuple):
    """A model: native context length, target layers, the profiles that apply ("none" first)
    and, per EAGLE3/MTP one-model profile, the draft layers the target manager holds."""

    max_seq_len: int
    layers: Stack
    profiles: tuple[str, ...]
    extra_layers: dict[str, Stack]


class Profile(NamedTuple):
    """Speculative headroom terms (§2, §5): K, E, G, the block-reuse backoff D, and the
    separate draft pool of a one-model external drafter (§6)."""

    mode: str
    draft_len: int
    extra: int
    step: int
    backoff: int
    draft: Stack | None = None


# ---- a family's tables: each generated module defines these, then calls ``bind`` ----
# The values here are an empty family's: kvgen's own copy of the interpreter sizes no model.
FAMILY = ""
SPEC_SHA256 = ""
TOKENS_PER_BLOCK = 1
KV_CACHE_DTYPE = ""
_MODELS: dict[str, Model] = {}
_PROFILES: dict[str, Profile] = {}
# Derived from the tables by ``_derive`` when a family binds the interpreter.
MODELS: tuple[str, ...] = ()
SPECULATIVE: tuple[str, ...] = ()
MAX_SEQ_LEN: dict[str, int] = {}
PROFILES: dict[str, tuple[str, ...]] = {}  # profiles that apply to each model, "none" first
MANAGERS: dict[str, tuple[str, ...]] = {}  # a separate draft pool is its own manager (§6)
# What ``_options`` checks each model's options against: its profiles, context and layers.
_LIMITS: dict[str, tuple[tuple[str, ...], int, int]] = {}
# A row's element code: bytes per element (a plain dtype), or <= 0 for a layout that stores
# scales beside its elements (§1), a key of ``_SCALED``: that layout's row of
# ``facts.SCALED_LAYOUTS``. NVFP4 is 0, which is also the code of a row with no dtype.
_ELEMENT_CODES = {**DTYPE_BYTES, **{name: -i for i, name in enumerate(SCALED_LAYOUTS)}}
_SCALED = {-i: layout for i, layout in enumerate(SCALED_LAYOUTS.values())}
_TERM_NAMES = (
    "slope",
    "per_request",
    "ctx_swa",
    "full_page_rounding",
    "context_page_rounding",
    "resume_rounding",
    "intercept",
)
_new = tuple.__new__  # builds a row without NamedTuple.__new__'s Python frame


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


class _Options(NamedTuple):
    """Every option of one sizing call, validated once (``_options``): plain ints, bools, a
    float and the names of the tables, so equal options are equal values. It is the key of
    the answers cache. Fields are the public keywords, in ``cost_terms``' order."""

    model: str
    speculative: str
    max_batch_size: int
    max_num_tokens: int
    max_seq_len: int
    tp_size: int
    pp_size: int
    pp_rank: int
    scratch_reuse: bool
    block_reuse: bool
    max_util_for_resume: float
    overlap_slack: bool
    semantics: str
    attention_dp: bool
    mamba_state_update: str
    dcp_size: int
    encoder_tokens: int | None


# What one computation answers: each manager's terms, and each manager's CacheCost.
_Answer = tuple[tuple[_Terms, ...], dict[str, CacheCost]]


def _did_you_mean(word: object, choices: Iterable[str]) -> str:
    # The same wording as kvgen.suggest, copied: a generated module cannot import kvgen.
    if not isinstance(word, str):
        return ""
    import difflib

    lowered = {choice.lower(): choice for choice in sorted(set(choices))}
    found = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[found[0]]!r}?)" if found else ""


def _name(argument: str, value: object, allowed: Iterable[str]) -> str:
    """``value`` when it is one of ``allowed``, else ValueError naming all of them."""
    allowed = tuple(allowed)
    if isinstance(value, str) and value in allowed:
        return value
    hint = _did_you_mean(value, allowed)
    raise ValueError(f"{argument} must be one of {', '.join(allowed)}; got {_shown(value)}{hint}")


# Every count and byte size an engine takes is a 64-bit integer; past this bound an argument
# describes no deployment, and the float arithmetic of the engine policies would overflow.
_MAX_INT = (1 << 63) - 1


def _shown(value: object) -> str:
    # repr of an argument for a message; an int too long for str() is shown by its size.
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    return repr(value)


def _integer(
    argument: str, value: object, low: int, high: int | None = None, what: str = ""
) -> int:
    """Any ``operator.index``-able integer (numpy ints too) in [low, high] (high: at most
    ``_MAX_INT``), as a plain ``int``; never a bool or a float."""
    try:
        number = None if isinstance(value, bool | float) else int(operator.index(value))  # type: ignore[arg-type]
    except TypeError:
        number = None
    kind = "a positive int" if low == 1 else "a non-negative int" if low == 0 else "an int"
    if number is None or number < low:
        raise ValueError(f"{argument} must be {kind}, got {_shown(value)}")
    if high is None:
        high, what = _MAX_INT, " (a 64-bit count)"
    if number > high:
        raise ValueError(f"{argument} must be <= {high}{what}, got {_shown(number)}")
    return number


def _fraction(argument: str, value: object) -> float:
    """A real number in (0, 1] as a float (numpy floats too); never a bool or a string."""
    try:
        number = None if isinstance(value, bool | str | bytes) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or not 0.0 < number <= 1.0:
        raise ValueError(f"{argument} must be in (0, 1], got {_shown(value)}")
    return number


def _flag(argument: str, value: object) -> bool:
    if value is True or value is False:
        return value
    raise ValueError(f"{argument} must be True or False, got {value!r}")


def _options(
    model: object,
    speculative: object,
    batch: object,
    chunk: object,
    max_seq_len: object,
    tp_size: object = 1,
    pp_size: object = 1,
    pp_rank: object = 0,
    scratch_reuse: object = False,
    block_reuse: object = False,
    util: object = _UTIL,
    overlap_slack: object = False,
    semantics: object = "trtllm-v2",
    attention_dp: object = False,
    mamba_state_update: object = "default",
    dcp_size: object = 1,
    encoder_tokens: object = None,
) -> _Options:
    """The one validation of every public function's options, in ``_Options``' order: each
    checked once, as a plain value, or ValueError naming the argument and what it takes.
    Valid plain values pass the inline checks; anything else goes through ``_integer`` and
    co., which name it or convert it (numpy ints, float subclasses)."""
    limits = _LIMITS.get(model) if type(model) is str else None
    if limits is None:
        model = _name("model", model, MODELS)
        limits = _LIMITS[model]
    profiles, most_tokens, layer_count = limits
    if speculative not in profiles:
        if type(speculative) is not str or speculative not in _PROFILES:
            speculative = _name("speculative", speculative, SPECULATIVE)
        raise ValueError(
            f"speculative {speculative!r} does not apply to model {model!r}; "
            f"profiles for {model}: {', '.join(profiles)}"
        )
    if type(batch) is not int or not 0 < batch <= _MAX_INT:
        batch = _integer("max_batch_size", batch, 1)
    if type(chunk) is not int or not 0 < chunk <= _MAX_INT:
        chunk = _integer("max_num_tokens", chunk, 1)
    if type(max_seq_len) is not int or not 0 < max_seq_len <= most_tokens:
        max_seq_len = _integer("max_seq_len", max_seq_len, 1, most_tokens, f" for {model}")
    if type(tp_size) is not int or not 0 < tp_size <= _MAX_INT:
        tp_size = _integer("tp_size", tp_size, 1)
    if type(pp_size) is not int or (pp_size != 1 and not 0 < pp_size <= layer_count):
        pp_size = _integer("pp_size", pp_size, 1, layer_count, " layers")
    if type(pp_rank) is not int or not 0 <= pp_rank < pp_size:
        pp_rank = _integer("pp_rank", pp_rank, 0)
        if pp_rank >= pp_size:
            raise ValueError(f"pp_rank must be in [0, {pp_size}), got {pp_rank}")
    if (
        type(scratch_reuse) is not bool
        or type(block_reuse) is not bool
        or type(overlap_slack) is not bool
    ):
        _flag("scratch_reuse", scratch_reuse)
        _flag("block_reuse", block_reuse)
        _flag("overlap_slack", overlap_slack)
    if type(util) is not float or not 0.0 < util <= 1.0:
        util = _fraction("max_util_for_resume", util)
    if semantics != "trtllm-v2" and semantics != "exact":  # also for unhashable values
        _name("semantics", semantics, SEMANTICS)
    if type(attention_dp) is not bool:
        _flag("attention_dp", attention_dp)
    if mamba_state_update != "default" and mamba_state_update != "replay":
        _name("mamba_state_update", mamba_state_update, MAMBA_STATE_UPDATES)
    if type(dcp_size) is not int or dcp_size != 1:
        dcp_size = _dcp_size(str(model), str(speculative), tp_size, attention_dp, dcp_size)
    if encoder_tokens is not None:
        encoder_tokens = _encoder_tokens(_MODELS[str(model)], model, encoder_tokens)
    values = (model, speculative, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank,
              scratch_reuse, block_reuse, util, overlap_slack, semantics, attention_dp,
              mamba_state_update, dcp_size, encoder_tokens)  # fmt: skip
    options: _Options = _new(_Options, values)
    return options


def _dcp_size(model: str, speculative: str, tp_size: int, attention_dp: object, dcp: object) -> int:
    """``dcp`` as an int, or ValueError where the engines refuse decode context parallelism
    (§9): the DCP group is carved from the TP ranks that hold copies of the same KV heads
    (vLLM ``config/parallel.py``, ``config/model.py``), and only full-attention caches are
    sharded (vLLM ``SlidingWindowSpec`` asserts ``DCP not support sliding window``)."""
    dcp = _integer("dcp_size", dcp, 1)
    if dcp == 1:
        return dcp
    if attention_dp:
        raise ValueError(dcp_with_attention_dp(dcp))
    if tp_size % dcp:
        raise ValueError(dcp_outside_tp(tp_size, dcp))
    entry = _MODELS[model]
    for stack in (entry.layers, entry.extra_layers.get(speculative), _PROFILES[speculative].draft):
        for name, kind in stack.kinds.items() if stack is not None else ():
            if kind.attention not in DCP_ATTENTION:
                raise ValueError(dcp_attention(dcp, name, kind.attention))
            if kind.kv_heads and (tp_size <= kind.kv_heads or dcp > tp_size // kind.kv_heads):
                raise ValueError(dcp_heads(dcp, name, kind.kv_heads, tp_size))
    return dcp


def _encoder_tokens(entry: Model, model: object, value: object) -> int:
    """``value`` when the model has cross-attention layers and the encoder can produce that
    many tokens (at most the spec's count); ValueError naming encoder_tokens otherwise."""
    most = max(
        (k.encoder_tokens for k in entry.layers.kinds.values() if k.attention == "cross"),
        default=0,
    )
    if not most:
        raise ValueError(no_encoder(model))
    return _integer("encoder_tokens", value, 1, most, f" for {model}")


def headroom(speculative: str = "none", *, overlap_slack: bool = False) -> int:
    """H = E + G (+ K with the overlap slack): how far capacity runs ahead of history at the
    allocation peak (§2). A property of the profile alone, so it takes no model."""
    profile = _PROFILES[_name("speculative", speculative, SPECULATIVE)]
    return _headroom(profile, _flag("overlap_slack", overlap_slack))


def _headroom(profile: Profile, overlap_slack: bool) -> int:
    return profile.extra + profile.step + (profile.draft_len if overlap_slack else 0)


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


def _rank_counts(stack: Stack, pp_size: int, pp_rank: int) -> dict[str, int]:
    """Layers of each kind on one pipeline rank (what ``_on_rank`` counts per kind)."""
    window = _rank_window(stack, pp_size, pp_rank)
    return {name: _count_in(before, window) for name, before in _prefix_counts(stack).items()}


def _prefix_counts(stack: Stack) -> dict[str, tuple[int, ...]]:
    """Per kind of ``stack``, how many of the first i pattern entries name it, i = 0..period."""
    return {
        name: (0, *itertools.accumulate(entry == name for entry in stack.pattern))
        for name in stack.kinds
    }


# At one tp, on one rank: a life cycle group is (window, sinks, sink pages, bytes per token of
# its layers, sum of its distinct b_l, chunk, its kind's class); the recurrent sums are those
# of ``_state_at_tp``.
_Group = tuple[int, int, int, int, int, int, "type[_Sliding]"]
_StateSums = tuple[int, int, int, int]
_NO_STATE: _StateSums = (0, 0, 0, 0)
# A recurrent kind on a rank: (layers, raw state bytes at tp=1, then by dimensions (§8): SSM
# heads, head dim, d_state, groups, d_conv, conv and SSM element bytes (0: NVFP4)).
_StateRow = tuple[int, int, int, int, int, int, int, int, int]
# A cross-attention kind on a rank: (layers, kv_heads, K and V head dims, element bytes,
# bytes per token not split by tp, encoder tokens of the spec).
_CrossRow = tuple[int, int, tuple[int, int], int, int, int]


def _scaled_bytes(heads: int, count: int, element: int) -> int:
    """Bytes of ``count`` elements over ``heads`` heads in a scaled layout (element <= 0):
    packed elements, a 1-byte scale per block (NVFP4 16, MX 32) or an fp32 scale per head."""
    bits, block, block_scale, head_scale = _SCALED[element]
    scales = -(-count // block) * block_scale if block else 0
    return -(-count * bits // 8) + scales + heads * head_scale


def _elements(count: int, element: int) -> int:
    """Bytes of ``count`` elements; element 0 is NVFP4: two per byte plus an FP8 scale per 16."""
    return count * element if element > 0 else _scaled_bytes(1, count, element)


def _state_at_tp(states: tuple[_StateRow, ...], tp_size: int) -> _StateSums:
    """Per slot on one rank, summed over a manager's recurrent layers (§8): the state (conv +
    SSM), the conv windows, the SSM states, and one replay history step (x and B in the cache
    dtype, dt and dA_cumsum in fp32). ValueError naming tp_size where the engine's even split
    of heads or conv channels is impossible."""
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


def _check_shared_on_rank(stack: Stack, pp_size: int, pp_rank: int) -> None:
    """ValueError naming the first layer of this rank that reads (KV sharing) a layer another
    pipeline rank holds: the engines refuse it (vLLM validate_kv_sharing_target). O(pattern)."""
    base, rem = divmod(stack.layer_count, pp_size)
    start = pp_rank * base + min(pp_rank, rem)
    end = start + base + (pp_rank < rem)
    period = len(stack.pattern)
    away = []  # (first layer of the kind on this rank, the layer it reads)
    for name, kind in stack.kinds.items():
        if kind.reads is not None and kind.reads < start:
            phases = [i for i, entry in enumerate(stack.pattern) if entry == name]
            first = min(start + (i - start) % period for i in phases)
            if first < end:
                away.append((first, kind.reads))
    if away:
        layer, reads = min(away)
        raise ValueError(kv_sharing_rank(pp_size, pp_rank, layer, reads))


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


# ---- cache kinds as values: one class per kind, chosen from a kind -> class map ----
# Each class answers, for the layers of its kind: the row they add to a manager's plan (less
# the layer count; ``rows`` names the row list: 0 paged attention, 1 recurrent state, 2 cross,
# None for no cache of its own), its bytes per token at a tp, and for a life cycle (sliding,
# chunked) the pages a request keeps under a headroom and its context bytes. The refusals of
# each kind are its rows' (``_dcp_size`` reads ``facts.DCP_ATTENTION``, ``_state_at_tp`` the
# uneven split of a state, ``_encoder_tokens`` the cross kinds).


def _dims(kind: Kind) -> tuple[int, int]:
    """K's and V's head dims of an attention kind (V's is K's unless the spec gives one)."""
    return kind.head_dim, kind.v_head_dim or kind.head_dim


class _CacheKind:
    """A kind of layer with no cache of its own; subclasses name their row list and row."""

    rows: int | None = None

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        return ()


class _Full(_CacheKind):
    """Full attention: every token of history stays in the cache (§1)."""

    rows = 0

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        fixed = kind.bytes_per_token + kind.extra_bytes_per_token
        element = _ELEMENT_CODES.get(kind.dtype, 0)
        window = kind.chunk or kind.window  # a chunked kind's life cycle spans a chunk
        shape = (kind.kv_heads, _dims(kind), element, fixed)
        return (window, kind.sink_tokens, *shape, kind.chunk, cls)

    @staticmethod
    def bytes_per_token(
        kv_heads: int, head_dim: tuple[int, int], element: int, fixed: int, tp: int
    ) -> int:
        """K and V of a layer's heads on one rank per token, each of its own head dim, scales
        included (§1)."""
        if not kv_heads:
            return fixed
        heads = -(-kv_heads // tp)  # ceil: KV heads are replicated on more ranks than heads
        k, v = heads * head_dim[0], heads * head_dim[1]
        if element > 0:
            return fixed + (k + v) * element
        return fixed + _scaled_bytes(heads, k, element) + _scaled_bytes(heads, v, element)


class _Sliding(_Full):
    """Sliding-window attention: a request keeps the last ``window`` tokens (§1, §3)."""

    scratch_reuse = True  # a stale page is reused at once: one layer per (w, b_l) grows (§3)

    @staticmethod
    def retention(window: int, backoff: int) -> int:
        return window + backoff  # block reuse extends retention (§5)

    @staticmethod
    def live_pages(window: int, head: int, tpb: int) -> int:
        return -(-(window + head - 2) // tpb)  # pages(w, H) = live + 1 + sink pages (§3)

    @staticmethod
    def spare(window: int, tpb: int) -> int:
        """Tokens the headroom must exceed for pages(w, H) to keep a spare page (§4)."""
        return window - 2


class _Chunked(_Sliding):
    """Chunked attention: a request keeps its current chunk of ``chunk`` tokens (§1, §3)."""

    scratch_reuse = False  # a chunk boundary makes a whole chunk stale at once

    @staticmethod
    def retention(window: int, backoff: int) -> int:
        return window  # block reuse never extends a chunk

    @staticmethod
    def live_pages(window: int, head: int, tpb: int) -> int:
        # pages(C, H) = ceil((C + H - 1 + tpb - gcd(C, tpb))/tpb) = live + 1 (§3)
        return -(-(window + head - 1 - math.gcd(window, tpb)) // tpb)

    @staticmethod
    def spare(window: int, tpb: int) -> int:
        return window - 1 - math.gcd(window, tpb)


class _Cross(_Full):
    """Cross-attention: the K/V of a request's encoder tokens, whole pages, never grown (§4)."""

    rows = 2

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        fixed = kind.bytes_per_token + kind.extra_bytes_per_token
        element = _ELEMENT_CODES.get(kind.dtype, 0)
        return (kind.kv_heads, _dims(kind), element, fixed, kind.encoder_tokens)


class _Recurrent(_CacheKind):
    """A recurrent state (Mamba, GDN): one slot per request, by dimensions or raw bytes (§8)."""

    rows = 1

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        conv_el = _ELEMENT_CODES.get(kind.dtype, 0)
        ssm_el = _ELEMENT_CODES.get(kind.ssm_dtype, 0)
        shape = (kind.ssm_heads, kind.ssm_head_dim, kind.d_state, kind.n_groups, kind.d_conv)
        return (kind.state_bytes, *shape, conv_el, ssm_el)


class _CacheLess(_CacheKind):
    """A layer with no cache (attention "none"): it only takes its index (§1)."""


class _SharedReader(_CacheKind):
    """A layer that reads another layer's cache (KV sharing): no cache of its own (§1)."""


_KIND_CLASSES: dict[str, type[_CacheKind]] = {
    "full": _Full,
    "sliding": _Sliding,
    "chunked": _Chunked,
    "cross": _Cross,
    "recurrent": _Recurrent,
    "none": _CacheLess,
}


def _kind_class(kind: Kind) -> type[_CacheKind]:
    return _SharedReader if kind.reads is not None else _KIND_CLASSES[kind.attention]


# ---- a (model, profile)'s layers, and the same layers on one rank at one tp ----
# A cached kind's layers of a manager: the kind's running count over the model's pattern
# (``_prefix_counts``; None: a draft or extra layer, all held by the last rank, §6), its layer
# count, its slot (a life cycle's index in its manager's groups, or _FULL, _STATE, _CROSS), its
# kind's class and its row less the count (``_CacheKind.row``; attention: (kv_heads,
# head_dim, element, fixed)).
_Member = tuple[tuple[int, ...] | None, int, int, "type[_CacheKind]", tuple[Any, ...]]
_FULL, _STATE, _CROSS = -1, -2, -3


# One manager's cached layers of a (model, profile), read from the tables once (``_layers``):
# (manager, its members in table order, its sliding and chunked life cycles as (window, sinks,
# sink pages, chunk, the kind's class) in (window, sinks, chunk) order). Plain tuples, like
# the rows on a rank below: internal, and a NamedTuple class costs ~0.1 ms of every import.
_Layers = tuple[str, tuple[_Member, ...], tuple[tuple[int, int, int, int, "type[_Sliding]"], ...]]
# One manager's layers on one pipeline rank at one tp (and DCP size), what depends only on
# (model, profile, tp, pp, rank, dcp), kept in ``_RANKS`` (``_rank``): (manager, bytes per
# token of full attention on the rank (on one DCP rank, §9), the recurrent sums, the life
# cycle groups, whether it holds recurrent layers, the cross-attention rows).
_OnRank = tuple[str, int, _StateSums, tuple[_Group, ...], bool, tuple[_CrossRow, ...]]


def _layers(model: str, speculative: str) -> tuple[_Layers, ...]:
    """The managers' layers of (model, profile), kept in ``_LAYERS``: the target holds the
    model's layers and the profile's extra (EAGLE3/MTP) layers, a separate draft pool its
    draft's (§6)."""
    entry, profile = _MODELS[model], _PROFILES[speculative]
    target = [(entry.layers, True)]
    extra = entry.extra_layers.get(speculative)
    if extra is not None:
        target.append((extra, False))
    managers = [_manager_layers("target", target)]
    if profile.draft is not None:
        managers.append(_manager_layers("draft", [(profile.draft, False)]))
    layers = _LAYERS[model, speculative] = tuple(managers)  # bounded: models x profiles
    return layers


def _manager_layers(manager: str, stacks: list[tuple[Stack, bool]]) -> _Layers:
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
            row = cls.row(kind)
            slot = _STATE if cls.rows == 1 else _CROSS
            if cls.rows == 0:
                window, sinks, *shape, chunk, _cls = row
                row = tuple(shape)
                slot = _FULL
                if window is not None:  # a life cycle, keyed by (window, sinks, chunk)
                    slot = cycles.setdefault((window, sinks, chunk), (len(cycles), cls))[0]
            members.append((before.get(name), kind.layers, slot, cls, row))
            if kind.ssm_heads and cls is _Full:  # a parallel hybrid layer holds a state too (§8)
                members.append((before.get(name), kind.layers, _STATE, _Recurrent,
                                _Recurrent.row(kind)))  # fmt: skip
    # Life cycles in (window, sinks, chunk) order: their slots renumbered to that order.
    order = sorted(cycles)
    renumber = {cycles[key][0]: i for i, key in enumerate(order)}
    members = [(b, n, renumber.get(slot, slot), cls, row) for b, n, slot, cls, row in members]
    groups = tuple(
        (window, sinks, -(-sinks // TOKENS_PER_BLOCK), chunk, cycles[window, sinks, chunk][1])
        for window, sinks, chunk in order
    )
    return manager, tuple(members), groups


def _rank(
    model: str, speculative: str, pp_size: int, pp_rank: int, tp_size: int, dcp: int
) -> tuple[_OnRank, ...]:
    """Each manager's layers on one rank at one tp and DCP size, kept in ``_RANKS`` so that
    a never-seen call at tp 8 / pp 2 costs what one at tp 1 does; ValueError (never kept)
    where the engines refuse the split: a KV-sharing reader away from its cache (§1), an
    uneven state (§8), full attention that does not split over DCP (§9)."""
    layers = _LAYERS.get((model, speculative)) or _layers(model, speculative)
    window = None
    if pp_size > 1:
        stack = _MODELS[model].layers
        if model in _READERS:  # KV sharing: each reader on the rank of its cache (§1)
            _check_shared_on_rank(stack, pp_size, pp_rank)
        window = _rank_window(stack, pp_size, pp_rank)
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
    slope = 0
    manager, members, groups = layers
    cycles = [0] * len(groups)
    distinct: list[list[int] | None] = [None] * len(groups)  # b_l once per life cycle (§3)
    states = []
    crosses = []
    for before, count, slot, cls, row in members:
        if before is None:
            if not last:
                continue
        elif window is not None:
            count = _count_in(before, window)
        if not count:
            continue
        if slot == _STATE:
            states.append((count, *row))
        elif slot == _CROSS:
            crosses.append((count, *row))
        else:
            heads, head_dim, element, fixed = row
            bpt = cls.bytes_per_token(heads, head_dim, element, fixed, tp)  # type: ignore[attr-defined]
            if slot == _FULL:
                slope += count * bpt
                continue
            cycles[slot] += count * bpt
            seen = distinct[slot]
            if seen is None:
                distinct[slot] = [bpt]
            elif bpt not in seen:
                seen.append(bpt)  # scratch reuse grows one layer per (w, b_l)
    on_rank_groups = []
    for i, seen in enumerate(distinct):
        if seen is not None:
            cycle_window, sinks, sink_pages, chunk, life = groups[i]
            on_rank_groups.append((cycle_window, sinks, sink_pages, cycles[i], sum(seen), chunk,
                                   life))  # fmt: skip
    sums = _state_at_tp(tuple(states), tp) if states else _NO_STATE
    return manager, slope, sums, tuple(on_rank_groups), bool(states), tuple(crosses)


# ---- the terms of one call: per manager, per life cycle ----


def _compute(options: _Options) -> _Answer:
    """Every named term of the static cost per manager (§3, §4) for validated options, and
    the CacheCost of each (built here, so that a never-seen ``cache_costs`` call runs one
    function): per manager, its layers on the rank (``_rank``), their life cycles
    (``_life_cycles``), the full pool, cross attention, the resume watermark, recurrent rows."""
    (model, speculative, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank, scratch_reuse,
     block_reuse, util, overlap_slack, semantics, attention_dp, update, dcp, encoder_tokens,
     ) = options  # fmt: skip
    profile = _PROFILES[speculative]
    if attention_dp:
        tp_size = 1  # attention-DP: every rank holds whole KV heads and whole states (§9)
    key = (model, speculative, pp_size, pp_rank, tp_size, dcp)
    ranked = _RANKS.get(key) or _rank(*key)
    head = _headroom(profile, overlap_slack)
    exact = semantics == "exact"
    tpb = TOKENS_PER_BLOCK
    span = tpb * dcp  # DCP: one page of tpb tokens on each DCP rank spans tpb * dcp tokens (§9)
    terms = []
    costs = {}
    for name, slope, sums, groups, states, crosses in ranked:
        per_request = state = sums[0]
        if crosses:  # cross-attention: fixed per request, whole pages (§4)
            per_request += _cross_bytes(crosses, tp_size, encoder_tokens)
        fixed_pool_bytes = batch * per_request
        ctx_swa = ctx_rounding = 0
        pools: tuple[tuple[int, int, int], ...] = ()
        cycles: tuple[tuple[int, int, int, int, int], ...] = ()
        if groups:
            scratch = scratch_reuse and name == "target"  # scratch reuse: targets only (§3)
            backoff = profile.backoff if block_reuse else 0
            as_full, held, ctx_swa, ctx_rounding, fixed, pools, cycles = _life_cycles(
                groups, profile.extra, head, backoff, scratch, exact, batch, chunk, max_seq_len
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
            recurrent = _state_rows(sums, batch, profile, attention_dp, update)
            rows_bytes = sum([value for _term, value in recurrent])
            intercept += rows_bytes
            fixed_pool_bytes += rows_bytes  # the reserved and speculative rows are fixed (§8)
        values = (name, slope, per_request, ctx_swa, full_rounding,
                  ctx_rounding if exact else None, resume_rounding, intercept, cycles,
                  fixed_pool_bytes, pools, recurrent, span)  # fmt: skip
        terms.append(_new(_Terms, values))
        costs[name] = _new(CacheCost, (slope, intercept))
    return tuple(terms), costs


# What a manager's sliding and chunked life cycles add (``_life_cycles``): bytes per token of
# those that reach max_seq_len (full attention, §1); bytes a request keeps on the others;
# their context bytes per token; under "exact" the context bytes whose chunk needs a rounding,
# their fixed pool bytes and their growing pools; each one's row of ``_Terms.life_cycles``.
_Cycles = tuple[int, int, int, int, int, tuple[tuple[int, int, int], ...], tuple[Any, ...]]


def _life_cycles(
    groups: tuple[_Group, ...],
    extra: int,
    head: int,
    backoff: int,
    scratch: bool,
    exact: bool,
    batch: int,
    chunk: int,
    max_seq_len: int,
) -> _Cycles:
    """A manager's sliding and chunked life cycles under headroom ``head`` (§3, §4), each
    through its kind's class: retention, the pages a request keeps, the spare page."""
    tpb = TOKENS_PER_BLOCK
    as_full = held = ctx_swa = ctx_rounding = fixed = 0
    pools = []
    cycles = []
    for window, sinks, sink_pages, cycle, distinct, attn_chunk, life in groups:
        window = life.retention(window, backoff)
        if window >= max_seq_len:
            as_full += cycle  # a window or chunk that reaches S is full attention (§1)
            continue
        live = life.live_pages(window, head, tpb)
        pages = live + 1 + sink_pages
        held += pages * tpb * cycle
        ctx = distinct if scratch and life.scratch_reuse else cycle
        ctx_swa += ctx
        if exact:  # whole pages of every pool as the shim builds them for T (§3, §4)
            # A context chunk rounds its pages up; unless the headroom already reserves a
            # spare page (pages(w, H) > pages(w, E)), "exact" charges tpb-1 tokens more (§4).
            rounding = 0
            if live == -(-(life.spare(window, tpb) + extra) // tpb):
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


def _dcp_slope(manager: str, slope: int, dcp: int) -> int:
    """Bytes per token of full-attention history on one DCP rank: each rank holds one token
    in ``dcp`` (§9); ValueError where that is not a whole number of bytes."""
    if slope % dcp:
        raise ValueError(
            f"{manager}: the {slope} bytes per token of full attention on this rank do not "
            f"divide by dcp_size {dcp}; the affine cost needs whole bytes per token of history"
        )
    return slope // dcp


def _state_rows(
    sums: _StateSums, batch: int, profile: Profile, attention_dp: bool, update: str
) -> tuple[tuple[str, int], ...]:
    """The recurrent rows the engine keeps beyond one per request (§8): one slot shared by the
    CUDA-graph padding dummies (+1 for the attention-DP dummy), and under speculative decoding
    B intermediate conv windows of T = K + 1 steps with either T SSM states (default) or a
    double-buffered replay history of max(16, T) steps per slot (replay)."""
    state, conv, ssm, replay = sums
    reserved = 1 + attention_dp
    rows = [("state_reserved_rows", reserved * state)]
    if profile.mode != "none":
        step = profile.draft_len + 1 if profile.mode == "pard" else profile.step  # T
        if update == "replay":
            rows.append(("spec_intermediate_states", batch * step * conv))
            history = max(16, step)
            rows.append(("spec_replay_history", (batch + reserved) * 2 * history * replay))
        else:
            rows.append(("spec_intermediate_states", batch * step * (conv + ssm)))
    return tuple(rows)


def _cached_terms(options: _Options) -> tuple[_Terms, ...]:
    """Each manager's terms for validated options, from the answers cache."""
    return _answers(options)[0]


def cost_terms(
    model: str,
    *,
    speculative: str = "none",
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    scratch_reuse: bool = False,
    block_reuse: bool = False,
    max_util_for_resume: float = 0.95,
    overlap_slack: bool = False,
    semantics: str = "trtllm-v2",
    attention_dp: bool = False,
    mamba_state_update: str = "default",
    dcp_size: int = 1,
    engine_terms: bool = False,
    encoder_tokens: int | None = None,
) -> dict[str, dict[str, int]]:
    """Every named term of the static cost, per cache manager, in bytes (§4). The terms, the
    options and ``engine_terms=True`` (what the engine does beside the quota, §9) are
    described in docs/api.md, "cost_terms"."""
    options = _options(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
    terms = _cached_terms(options)
    out = {}
    for t in terms:
        named = {k: v for k, v in zip(_TERM_NAMES[:6], t[1:7], strict=True) if v is not None}
        named.update(t.states)  # recurrent rows beyond one per request (§8)
        named["intercept"] = t.intercept
        if t.context_page_rounding is not None and t.resume_rounding is None:
            # quota(T) rounds each growing pool up to whole pages: at most tpb-1 tokens each.
            rounding = sum(b // t.span for b, _, _ in t.pools)
            named["pool_page_rounding"] = (t.span - 1) * rounding
        out[t.manager] = named
    if _flag("engine_terms", engine_terms):
        head = _headroom(_PROFILES[options.speculative], options.overlap_slack)
        for t in terms:
            out[t.manager].update(_engine_terms(t, head, options))
    return out


def _engine_terms(terms: _Terms, head: int, options: _Options) -> dict[str, int]:
    """The engine's terms beside the quota of one manager (§9; docs/api.md, "cost_terms")."""
    batch, chunk = options.max_batch_size, options.max_num_tokens
    named = {}
    if terms.manager == "target" and terms.ctx_swa:
        named["startup_estimate_difference"] = chunk * terms.ctx_swa
    if terms.resume_rounding is None:
        quota = _quota(terms, options.max_seq_len, chunk)
        util32 = float32(options.max_util_for_resume)
        named["watermark_quota"] = math.ceil(quota / util32) - quota
    # History 1 holds no stale SWA page (§3): every life cycle holds ceil((1 + H)/tpb) pages.
    paged = terms.slope + sum(cycle[3] for cycle in terms.life_cycles)
    if paged:
        pages = -(-(1 + head) // terms.span)  # span: tpb, or tpb * dcp_size under DCP (§9)
        named["cuda_graph_padding"] = pages * terms.span * paged
    if terms.per_request:
        named["overlap_scheduler_requests"] = batch * terms.per_request
    return named


def cache_costs(
    model: str,
    *,
    speculative: str = "none",
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    scratch_reuse: bool = False,
    block_reuse: bool = False,
    max_util_for_resume: float = _UTIL,
    overlap_slack: bool = False,
    semantics: str = "trtllm-v2",
    attention_dp: bool = False,
    mamba_state_update: str = "default",
    dcp_size: int = 1,
    encoder_tokens: int | None = None,
) -> dict[str, CacheCost]:
    """Static cost per cache manager (§4): ``"target"``, and ``"draft"`` for a separate pool."""
    options = _options(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
    return _answers(options)[1].copy()


def _pool_bytes(terms: _Terms, tokens: int) -> int:
    # "exact": every pool in whole pages, ceil((min(T, cap) + rounding)/span) each (§4; the
    # span is tpb but under DCP, where only the full pool grows, §9).
    total, span = terms.fixed_pool_bytes, terms.span
    for page_bytes, cap, rounding in terms.pools:
        held = tokens if cap < 0 or tokens < cap else cap
        total += page_bytes * -(-(held + rounding) // span)
    return total


def _quota(terms: _Terms, tokens: int, chunk: int) -> int:
    # quota(T) = T*slope + B*per_request + min(T, N)*ctx_swa (§4); a resume-rounded pool is
    # sized for any T.
    if terms.resume_rounding is not None:
        return terms.intercept
    if terms.context_page_rounding is not None:
        return _pool_bytes(terms, tokens)
    fixed = terms.intercept - chunk * terms.ctx_swa
    return tokens * terms.slope + fixed + min(tokens, chunk) * terms.ctx_swa


def quota_from_max_tokens(
    model: str,
    max_tokens: int,
    *,
    speculative: str = "none",
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    scratch_reuse: bool = False,
    block_reuse: bool = False,
    max_util_for_resume: float = 0.95,
    overlap_slack: bool = False,
    semantics: str = "trtllm-v2",
    attention_dp: bool = False,
    mamba_state_update: str = "default",
    dcp_size: int = 1,
    encoder_tokens: int | None = None,
) -> dict[str, int]:
    """Per manager, the quota in bytes for ``max_tokens`` tokens of full-attention history:
    ``quota(T) = T*slope + B*per_request + min(T, N)*ctx_swa`` (§4). The inverse of
    ``max_tokens_from_quota``."""
    tokens = max_tokens if type(max_tokens) is int and 0 <= max_tokens <= _MAX_INT else None
    tokens = _integer("max_tokens", max_tokens, 0) if tokens is None else tokens
    options = _options(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
    chunk = options.max_num_tokens
    return {t.manager: _quota(t, tokens, chunk) for t in _cached_terms(options)}


def _tokens(terms: _Terms, quota: int, chunk: int) -> int | None:
    # The largest T with quota(T) <= quota, None when nothing bounds it (§4).
    if terms.resume_rounding is not None:
        return None if quota >= terms.intercept else 0
    if terms.context_page_rounding is not None:
        return _exact_tokens(terms, quota, chunk)
    slope, ctx = terms.slope, terms.ctx_swa
    room = quota - (terms.intercept - chunk * ctx)
    if room < 0:
        return 0
    if slope == 0 and room >= chunk * ctx:
        return None  # every context token fits and nothing else grows with T
    if room <= chunk * (slope + ctx):
        return room // (slope + ctx)
    return chunk + (room - chunk * (slope + ctx)) // slope


def _exact_tokens(terms: _Terms, quota: int, chunk: int) -> int | None:
    # The largest T whose whole-page pools fit (§4): past N only the full pool grows, one
    # page per tpb tokens; below N every pool grows one page per tpb tokens, so whole periods
    # of tpb tokens are counted and the last period is searched.
    if quota < _pool_bytes(terms, 0):
        return 0
    tpb = terms.span  # tokens per page of every growing pool (tpb * dcp_size under DCP, §9)
    at_chunk = _pool_bytes(terms, chunk)
    if quota >= at_chunk:
        if not terms.slope:
            return None  # nothing grows past N
        page_bytes, _, rounding = terms.pools[-1]  # the full pool
        pages = -(-(chunk + rounding) // tpb) + (quota - at_chunk) // page_bytes
        return pages * tpb - rounding
    period = sum(page_bytes for page_bytes, _, _ in terms.pools)
    low = min((quota - _pool_bytes(terms, 0)) // period * tpb, chunk - 1)
    high = min(low + tpb, chunk)  # _pool_bytes(high) > quota
    while high - low > 1:
        mid = (low + high) // 2
        if _pool_bytes(terms, mid) <= quota:
            low = mid
        else:
            high = mid
    return low


def max_tokens_from_quota(
    model: str,
    quota_bytes: Mapping[str, int],
    *,
    speculative: str = "none",
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    scratch_reuse: bool = False,
    block_reuse: bool = False,
    max_util_for_resume: float = 0.95,
    overlap_slack: bool = False,
    semantics: str = "trtllm-v2",
    attention_dp: bool = False,
    mamba_state_update: str = "default",
    dcp_size: int = 1,
    encoder_tokens: int | None = None,
) -> dict[str, int | None]:
    """Per manager in ``quota_bytes`` (a dict like the one ``quota_from_max_tokens`` and
    ``split_budget`` return; any of the profile's managers), the largest T with
    ``quota(T) <= quota_bytes[manager]``: ``None`` when no full-attention layer bounds it (the
    manager's cost stops growing with T)."""
    options = _options(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
    terms = {t.manager: t for t in _cached_terms(options)}
    if not isinstance(quota_bytes, Mapping) or not quota_bytes:
        raise ValueError(
            f"quota_bytes must map cache managers ({', '.join(terms)}) to bytes, "
            f"e.g. {{'target': 1 << 30}}; got {quota_bytes!r}"
        )
    chunk = options.max_num_tokens
    out: dict[str, int | None] = {}
    for manager, quota in quota_bytes.items():
        _name("quota_bytes key", manager, terms)
        quota = _integer(f"quota_bytes[{manager!r}]", quota, 0)
        out[manager] = _tokens(terms[manager], quota, chunk)
    return out


def quota_for_requests(
    model: str,
    *,
    requests: int,
    seq_len: int,
    speculative: str = "none",
    max_num_tokens: int,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    scratch_reuse: bool = False,
    block_reuse: bool = False,
    max_util_for_resume: float = 0.95,
    semantics: str = "exact",
    dcp_size: int = 1,
    encoder_tokens: int | None = None,
) -> dict[str, int]:
    """Per manager, the least quota in bytes with which ``requests`` concurrent requests (the
    batch size) each run to ``seq_len`` tokens (the max_seq_len), prompts chunked by
    ``max_num_tokens`` and speculative steps with any acceptance, without running out of pages.

    A request's capacity peaks at ``seq_len - 1 + H`` (its last step), so the full pool must
    hold ``P = R * ceil((seq_len - 1 + H) / tpb)`` pages at once, which the whole-page pools
    first reach at ``T = P*tpb - R*(tpb-1) - tpb + 1`` (§3, §4); the answer is
    ``quota_from_max_tokens`` of that T, SWA and recurrent pools as that T plans them. An SWA
    pool's context pages grow with min(T, N) too: T is also at least the least T whose
    context pages cover the worst iteration (``_swa_context_tokens``), and without a full
    pool that alone sets T. Under ``"trtllm-v2"`` the pools are ``ceil(T/tpb)`` full pages
    and ``ceil(min(T, N)/tpb)`` context pages: T is ``R * ceil((seq_len - 1 + H)/tpb) * tpb``
    (or the SWA pools' least T, in whole pages) and the answer is those pools' bytes: R
    requests reach their last step in both semantics (``R * (seq_len - 1 + H)`` tokens hold
    fewer pages than they need). The worst iteration of an SWA life cycle without a spare
    page needs ``context_page_rounding``, which only ``"exact"`` pools hold.
    Under decode context parallelism a full-attention page spans ``tpb * dcp_size`` tokens
    (§9) in place of tpb.

    ``"exact"`` sizes kvgen's own pools (the shim's). ``"trtllm-v2"`` follows TensorRT-LLM's
    KV cache manager V2 (the early-2026 revision, §4, §10), which is handed one quota per
    manager and splits it over its pool groups in proportion to slot bytes x life cycles:
    the answer is the least quota from which that engine builds at least those whole-page
    pools in every group (kvgen's pool bytes where one group holds them all); recurrent and
    cross-attention bytes are added outside the split. ValueError under ``"trtllm-v2"`` for
    SWA scratch reuse beside another pool group (not modelled; use ``"exact"``).
    """
    requests = _integer("requests", requests, 1)
    seq_len = _integer("seq_len", seq_len, 1)
    terms = _cached_terms(_options(
        model, speculative, requests, max_num_tokens, seq_len, tp_size, pp_size, pp_rank,
        scratch_reuse, block_reuse, max_util_for_resume, False, semantics, False, "default",
        dcp_size,
        encoder_tokens,
    ))  # fmt: skip
    profile = _PROFILES[speculative]
    tpb = terms[0].span  # tokens per full-attention page: tpb * dcp_size under DCP (§9)
    peak = seq_len - 1 + profile.extra + profile.step  # one request's capacity at its peak
    chunk = operator.index(max_num_tokens)
    pages = -(-peak // tpb)
    exact = semantics == "exact"
    # Every request holds ceil(peak/tpb) whole pages at its last step, in both semantics: the
    # "exact" full pool is ceil((T + R*(tpb-1))/tpb) pages, the "trtllm-v2" one ceil(T/tpb).
    if exact:
        full_tokens = max(0, requests * (pages * tpb - tpb + 1) - tpb + 1)
    else:
        full_tokens = requests * pages * tpb
    out = {}
    for t in terms:
        tokens = full_tokens if t.slope else 0
        # The SWA pools come in life-cycle order; the full pool, if any, is one more at the end.
        roundings = [r for _page, _cap, r in t.pools] if exact else [0] * len(t.life_cycles)
        cycles = zip(t.life_cycles, roundings, strict=False)
        for (window, _sinks, _pages, _bytes, attn_chunk), rounding in cycles:
            # pages(w, x) - 1 = ceil((w - 2 + x)/tpb); chunked: ceil((C - 1 - gcd + x)/tpb) (§3)
            offset = attn_chunk - 1 - math.gcd(attn_chunk, tpb) if attn_chunk else window - 2
            least = _swa_context_tokens(offset, profile.extra, profile.extra + profile.step,
                                        requests, chunk, rounding)  # fmt: skip
            tokens = max(tokens, least)
        if exact:
            out[t.manager] = _quota(t, tokens, chunk)
        else:
            out[t.manager] = _engine_split_quota(model, t, tokens, chunk, requests, scratch_reuse)
    return out


def _engine_split_quota(
    model: str, terms: _Terms, tokens: int, chunk: int, requests: int, scratch: bool
) -> int:
    """The "trtllm-v2" quota of one manager for T = ``tokens``: the least quota from which
    TensorRT-LLM's KV cache manager V2 (the early-2026 revision, §4) builds at least the
    whole-page pools of ``_whole_pages`` in every pool group. The engine merges full and
    sliding life cycles of equal slot bytes into one pool group and splits one quota over
    the groups in proportion to slot bytes x life cycles (``trtllm_split``); with one group
    it gets the whole quota, rounded up to the engine's grain, so kvgen's pools are the
    answer. The split reads only slot bytes: a chunked life cycle is one more group of its
    own (as the shim builds it), a DCP page its bytes on one rank. Recurrent states and
    cross-attention caches live outside the split (TensorRT-LLM holds them in managers of
    their own) and add their bytes. ValueError for SWA scratch reuse beside another group:
    its scratch pools are a later revision's, whose split is not modelled."""
    whole = _whole_pages(terms, tokens, chunk)
    tpb = TOKENS_PER_BLOCK
    context = -(-min(-(-tokens // terms.span) * terms.span, chunk) // tpb)
    # (slot bytes, pages, the key of its pool group): chunked life cycles share no group.
    pools = [
        (tpb * b, requests * pages + context, (-i - 1) if attn_chunk else tpb * b)
        for i, (_w, _s, pages, b, attn_chunk) in enumerate(terms.life_cycles)
    ]
    if terms.slope:
        pools.append((terms.span * terms.slope, -(-tokens // terms.span), terms.span * terms.slope))
    groups = len({key for _size, _pages, key in pools})
    if groups <= 1 or terms.resume_rounding is not None:
        return whole  # one pool group: the engine's grain only rounds its quota up
    sliding = any(not cycle[4] for cycle in terms.life_cycles)  # chunked ones never reuse
    if scratch and sliding and terms.manager == "target":  # scratch reuse: targets only (§3)
        raise ValueError(
            f"{model} {terms.manager}: semantics 'trtllm-v2' is the quota TensorRT-LLM's KV "
            f"cache manager V2 (the early-2026 revision, docs/cost-model.md §4) splits over "
            f"its {groups} pool groups, and SWA scratch reuse (a later revision's scratch "
            "pools) is not modelled in that split; use semantics='exact' (kvgen's own pools, "
            "which the shim serves) or scratch_reuse=False"
        )
    outside = whole - sum(size * pages for size, pages, _key in pools)  # states, cross caches
    return _least_split_quota(tuple(pools)) + outside


@functools.lru_cache(maxsize=4096)
def _least_split_quota(pools: tuple[tuple[int, int, int], ...]) -> int:
    """The least quota from which the engine builds ``pages`` slots of every pool group of
    (slot bytes, pages, group key) ``pools``: pools of one key share one group."""
    keys: dict[int, list[int]] = {}  # group key -> [slot bytes, life cycles, pages]
    for size, pages, key in pools:
        group = keys.setdefault(key, [size, 0, 0])
        group[1] += 1
        group[2] += pages
    groups = [PoolGroup((size,), cycles) for size, cycles, _pages in keys.values()]
    return least_quota(groups, [pages for _size, _cycles, pages in keys.values()])


def _whole_pages(terms: _Terms, tokens: int, chunk: int) -> int:
    """The "trtllm-v2" pools of T tokens as the runtime builds them, in whole pages: the full
    pool ceil(T/span) pages and the context pages ceil(min(T, N)/tpb), where the affine
    estimate charges only T and min(T, N) tokens."""
    if terms.resume_rounding is not None:
        return terms.intercept
    tokens = -(-tokens // terms.span) * terms.span
    context = min(tokens, chunk)
    return _quota(terms, tokens, chunk) + (-context % TOKENS_PER_BLOCK) * terms.ctx_swa


def _swa_context_tokens(
    offset: int, extra: int, head: int, requests: int, chunk: int, rounding: int
) -> int:
    """The least T whose SWA context pages, ``ceil((min(T, N) + rounding) / tpb)``, cover the
    worst iteration of R requests (§3): each request holds at most pages(w, H) generating, and
    a context chunk of n tokens at most pages(w, n + E) = ceil((w + E + n - 2)/tpb) + 1; the
    first chunk length that adds a page to pages(w, H) is ``first``, every tpb tokens more add
    one. With k chunks of N tokens the most added pages are ``k + (N - k*first) // tpb``,
    which grows with k while first < tpb (most chunks) and shrinks from k = 1 otherwise.
    ``offset`` is w - 2 (pages(w, x) - 1 = ceil((offset + x)/tpb)), or C - 1 - gcd(C, tpb)
    for a chunked life cycle."""
    tpb = TOKENS_PER_BLOCK
    live = -(-(offset + head) // tpb)  # pages(w, H) - 1
    first = live * tpb - (offset + extra) + 1
    if chunk < first:
        return 0
    chunks = min(requests, chunk // first) if first < tpb else 1
    pages = chunks + (chunk - chunks * first) // tpb
    return max(0, (pages - 1) * tpb + 1 - rounding)


def split_budget(
    model: str,
    budget_bytes: int,
    *,
    tier: str = "gpu",
    speculative: str = "none",
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    scratch_reuse: bool = False,
    block_reuse: bool = False,
    max_util_for_resume: float = 0.95,
    overlap_slack: bool = False,
    semantics: str = "trtllm-v2",
    attention_dp: bool = False,
    mamba_state_update: str = "default",
    dcp_size: int = 1,
    encoder_tokens: int | None = None,
) -> dict[str, int]:
    """Share one budget between the target and a separate draft pool (§6).

    GPU: each manager gets its intercept, the rest is split by slope; the shares sum to the
    budget. Host or disk tiers split by slope alone. Raises ValueError when the budget does
    not cover the intercepts.
    """
    budget = _integer("budget_bytes", budget_bytes, 0)
    _name("tier", tier, TIERS)
    options = _options(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
    return _shares(_cached_terms(options), budget, tier)


def _shares(terms: tuple[_Terms, ...], budget: int, tier: str) -> dict[str, int]:
    """``split_budget`` of a validated budget over validated terms (§6)."""
    if len(terms) == 1:
        return {"target": budget}
    target, draft = terms
    slopes = target.slope + draft.slope
    if tier == "host":
        share = budget * draft.slope // slopes if slopes else 0
        return {"target": budget - share, "draft": share}
    room = budget - (target.intercept + draft.intercept)
    if room < 0 or (room == 0 and slopes > 0):
        raise ValueError(
            f"budget_bytes {budget} does not cover the fixed costs "
            f"{target.intercept} (target) + {draft.intercept} (draft)"
        )
    draft_share = draft.intercept + (room * draft.slope // slopes if slopes else 0)
    return {"target": budget - draft_share, "draft": draft_share}


def max_blocks_per_seq(
    model: str,
    *,
    speculative: str = "none",
    max_seq_len: int,
    overlap_slack: bool = False,
    dcp_size: int = 1,
) -> int:
    """ceil((S + H) / tpb), rounded up to a multiple of 4 (the block-table width) (§4); under
    decode context parallelism a page spans tpb * dcp_size tokens (§9)."""
    options = _options(model, speculative, 1, 1, max_seq_len, overlap_slack=overlap_slack)
    dcp = dcp_size if type(dcp_size) is int and dcp_size > 0 else _integer("dcp_size", dcp_size, 1)
    head = _headroom(_PROFILES[options.speculative], options.overlap_slack)
    blocks = -(-(options.max_seq_len + head) // (TOKENS_PER_BLOCK * dcp))
    return -(-blocks // 4) * 4


def pages_per_request(
    model: str,
    *,
    speculative: str = "none",
    max_seq_len: int,
    pp_size: int = 1,
    pp_rank: int = 0,
    block_reuse: bool = False,
    overlap_slack: bool = False,
) -> dict[str, dict[str, int]]:
    """Peak pages one request holds on each SWA life cycle, per manager (§3).

    Keys are ``"w<window>"`` (``"w<window>s<sinks>"`` with attention sinks, ``"c<chunk>"``
    for chunked local attention); full-attention life cycles grow with the sequence and are
    not listed.
    """
    options = _options(model, speculative, 1, 1, max_seq_len, 1, pp_size, pp_rank,
                       block_reuse=block_reuse, overlap_slack=overlap_slack)  # fmt: skip
    terms = _cached_terms(options)
    return {
        t.manager: {_cycle_name(w, s, c): pages for w, s, pages, _, c in t.life_cycles}
        for t in terms
    }


def _cycle_name(window: int, sinks: int, chunk: int) -> str:
    if chunk:
        return f"c{chunk}"
    return f"w{window}s{sinks}" if sinks else f"w{window}"


# ---- binding: a family's tables to this interpreter ----
# The version of this runtime: a generated module built for runtime N runs on any runtime >= N
# (protobuf's rule); bump it when generated tables need something an older runtime lacks.
RUNTIME_VERSION = 1
# Names of the runtime itself, never copied into a family's namespace.
_RUNTIME_ONLY = frozenset({"RUNTIME_VERSION", "bind", "install", "require_version"})
# What ``_derive`` precomputes per family (besides the public names declared above), and the
# caches it empties: what a (model, profile) holds, by manager (filled on first use, bounded
# by models x profiles), and what it holds on one rank at one tp and DCP size.
_READERS: frozenset[str]
_LAYERS: dict[tuple[str, str], tuple[_Layers, ...]]
_RANKS: dict[tuple[str, str, int, int, int, int], tuple[_OnRank, ...]]
_answers: Callable[[_Options], _Answer]


def require_version(gencode: int, module: str) -> None:
    """ImportError unless this runtime is at least as new as the one ``module`` was generated
    for (``gencode``): generation writes the runtime beside the modules, so a mismatch means
    part of an output folder was copied without the rest."""
    if gencode > RUNTIME_VERSION:
        raise ImportError(
            f"{module} needs kvgen sizing runtime {gencode} or newer; {__name__} is "
            f"{RUNTIME_VERSION}: copy the whole generated folder (`kvgen generate` writes both)"
        )


def install(source: dict[str, object], namespace: dict[str, object]) -> None:
    """Copy a runtime module's definitions (``source``, its globals) into ``namespace``: each
    function it defines is rebuilt over ``namespace`` (the same code, so the names it reads are
    the family's tables and the other functions installed there, exactly as if the runtime
    were written out in the family's module); every other name is shared, unless the
    namespace already defines it. ``__all__`` grows by the runtime's."""
    module = namespace.get("__name__")
    for name, value in source.items():
        if name.startswith("__") or name in _RUNTIME_ONLY:
            continue
        if isinstance(value, types.FunctionType) and value.__globals__ is source:
            function = types.FunctionType(
                value.__code__, namespace, name, value.__defaults__, value.__closure__
            )
            function.__kwdefaults__ = value.__kwdefaults__
            function.__doc__ = value.__doc__
            function.__qualname__ = value.__qualname__
            function.__annotations__ = value.__annotations__
            function.__module__ = module  # type: ignore[assignment]
            namespace[name] = function
        elif name not in namespace:
            namespace[name] = value
    exported = namespace.get("__all__", [])
    assert isinstance(exported, list)
    namespace["__all__"] = [*exported, *source.get("__all__", [])]  # type: ignore[misc]


def bind(namespace: dict[str, object]) -> None:
    """Make ``namespace`` (the globals of a module that defines a family's tables: FAMILY,
    SPEC_SHA256, TOKENS_PER_BLOCK, KV_CACHE_DTYPE, _MODELS, _PROFILES) that family's sizing
    module: the interpreter installed over it (``install``), then what depends only on the
    tables precomputed (``_derive``)."""
    install(globals(), namespace)
    namespace["_derive"]()  # type: ignore[operator]  # the copy over the family's globals


def _derive() -> None:
    """Per family, at bind (its namespace is this function's globals): the public tables of
    names, each model's limits, the models with KV-sharing readers, and empty caches."""
    global MODELS, SPECULATIVE, MAX_SEQ_LEN, PROFILES, MANAGERS
    global _READERS, _LIMITS, _LAYERS, _RANKS, _answers
    MODELS = tuple(_MODELS)
    SPECULATIVE = tuple(_PROFILES)
    MAX_SEQ_LEN = {name: model.max_seq_len for name, model in _MODELS.items()}
    PROFILES = {name: model.profiles for name, model in _MODELS.items()}
    MANAGERS = {
        name: ("target",) if profile.draft is None else ("target", "draft")
        for name, profile in _PROFILES.items()
    }
    # Models with KV-sharing readers, whose pipeline splits are checked (none: no per-call work).
    _READERS = frozenset(
        name
        for name, model in _MODELS.items()
        if any(kind.reads is not None for kind in model.layers.kinds.values())
    )
    _LIMITS = {
        name: (model.profiles, model.max_seq_len, model.layers.layer_count)
        for name, model in _MODELS.items()
    }
    _LAYERS = {}
    _RANKS = {}
    # A pure function of validated options (plain values: 1, 1.0 and True never reach it alike).
    _answers = functools.lru_cache(maxsize=4096)(_compute)
