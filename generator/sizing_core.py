"""The sizing interpreter: the generic half of every ``generated/<family>/sizing.py``.

``kvgen generate`` copies this file verbatim into each family's sizing module, which keeps the
modules stdlib-only and self-contained (an engine imports them without kvgen installed). Two
parts change: this docstring becomes the family's, and the block between the ``family tables``
and ``interpreter`` comments becomes the family's tables (plain rows of the spec's facts:
layer kinds with their layer counts, patterns, speculative profiles). Here that block holds the
tables of ``tests/fixtures/sizing_core_example.yaml``, so this source runs and is unit tested as
is. The formulas are those of ``docs/cost-model.md`` §1-§6; ``kvgen.costmodel`` derives the
same numbers layer by layer and the test suite checks that both agree.
"""

# No `from __future__ import annotations`: NamedTuple would turn every string annotation into
# a compiled ForwardRef at import, which costs more than the rest of the import together.
import functools
import math
import operator
import struct
from collections.abc import Iterable, Mapping
from typing import NamedTuple

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
TIERS = ("gpu", "host")
MAMBA_STATE_UPDATES = ("default", "replay")


class CacheCost(NamedTuple):
    """``cost(T) = slope * T + intercept``: bytes per token of full-attention history, bytes."""

    slope: int
    intercept: int


class Kind(NamedTuple):
    """One layer kind of a stack and how many of the stack's layers have it (§1).

    ``kv_heads`` 0 means a shape that tensor parallelism does not split (MLA latent, raw
    bytes): its size is ``bytes_per_token``. ``window`` is None for full attention.
    """

    attention: str  # "full", "sliding", "recurrent", "none" (no cache) or "chunked"
    layers: int
    window: int | None = None
    sink_tokens: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    dtype: str = ""
    bytes_per_token: int = 0
    extra_bytes_per_token: int = 0
    state_bytes: int = 0  # recurrent: per request per layer at tp=1
    # Recurrent state by dimensions (§8): conv window conv_dim/tp x (d_conv-1) in ``dtype``,
    # SSM state ssm_heads/tp x ssm_head_dim x d_state in ``ssm_dtype``; ssm_heads 0: raw bytes.
    ssm_heads: int = 0
    ssm_head_dim: int = 0
    d_state: int = 0
    n_groups: int = 0
    d_conv: int = 0
    ssm_dtype: str = ""
    chunk: int = 0  # chunked local attention: tokens per attention chunk (§3)


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


# ---- family tables (from the spec) ----
FAMILY = "example"
SPEC_SHA256 = "fff392bff196ed960e6b7be8969b3b857be535590d7f229a0f8dc6b5cd8540c7"
TOKENS_PER_BLOCK = 16
KV_CACHE_DTYPE = "bf16"
# Models: native context length, the target's layers (each kind with its layer count, §1), the
# profiles that apply ("none" first) and the draft layers an EAGLE3/MTP profile adds.
_MODELS: dict[str, Model] = {
    "hybrid": Model(
        max_seq_len=4096,
        layers=Stack(
            layer_count=6,
            pattern=("local", "ssm", "global", "mlp"),
            kinds={
                "global": Kind("full", layers=1, kv_heads=4, head_dim=8, dtype="fp8"),
                "local": Kind(
                    "sliding",
                    layers=2,
                    window=64,
                    sink_tokens=4,
                    kv_heads=2,
                    head_dim=8,
                    dtype="bf16",
                ),
                "mlp": Kind("none", layers=1),
                "ssm": Kind("recurrent", layers=2, state_bytes=1000),
            },
        ),
        profiles=("none", "pard2", "eagle1"),
        extra_layers={
            "eagle1": Stack(
                layer_count=1,
                pattern=("e",),
                kinds={"e": Kind("full", layers=1, kv_heads=1, head_dim=8, dtype="bf16")},
            ),
        },
    ),
    "latent": Model(
        max_seq_len=2048,
        layers=Stack(
            layer_count=3,
            pattern=("mla",),
            kinds={"mla": Kind("full", layers=3, bytes_per_token=160, extra_bytes_per_token=8)},
        ),
        profiles=("none", "eagle1"),
        extra_layers={
            "eagle1": Stack(
                layer_count=1,
                pattern=("e",),
                kinds={"e": Kind("full", layers=1, kv_heads=1, head_dim=8, dtype="bf16")},
            ),
        },
    ),
}
# Speculative profiles: K, E, G and the block-reuse backoff D (§2, §5), and a separate draft pool.
_PROFILES: dict[str, Profile] = {
    "none": Profile("none", draft_len=0, extra=0, step=1, backoff=0),
    "pard2": Profile(
        "pard",
        draft_len=2,
        extra=1,
        step=4,
        backoff=0,
        draft=Stack(
            layer_count=2,
            pattern=("d",),
            kinds={"d": Kind("sliding", layers=2, window=32, kv_heads=1, head_dim=8, dtype="bf16")},
        ),
    ),
    "eagle1": Profile("eagle3", draft_len=1, extra=0, step=2, backoff=1),
}


# ---- interpreter: kvgen.sizing_core, the same in every generated module ----
MODELS: tuple[str, ...] = tuple(_MODELS)
SPECULATIVE: tuple[str, ...] = tuple(_PROFILES)
MAX_SEQ_LEN: dict[str, int] = {name: model.max_seq_len for name, model in _MODELS.items()}
# Profiles that apply to each model, "none" first.
PROFILES: dict[str, tuple[str, ...]] = {name: model.profiles for name, model in _MODELS.items()}
# Cache managers per profile: a separate draft pool is its own manager (§6).
MANAGERS: dict[str, tuple[str, ...]] = {
    name: ("target",) if profile.draft is None else ("target", "draft")
    for name, profile in _PROFILES.items()
}
_DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
_FLOAT32 = struct.Struct("f")
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
    """One manager's named terms of §4; the rounding terms are None where they do not apply
    (the two "exact" ones under "trtllm-v2", resume rounding but for a single-SWA-pool draft)."""

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
    states: tuple[tuple[str, int], ...] = ()  # recurrent rows beyond one per request (§8)


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
    raise ValueError(f"{argument} must be one of {', '.join(allowed)}; got {value!r}{hint}")


def _integer(
    argument: str, value: object, low: int, high: int | None = None, what: str = ""
) -> int:
    """Any ``operator.index``-able integer (numpy ints too) in [low, high]; never a bool or a
    float."""
    try:
        number = None if isinstance(value, bool | float) else operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        number = None
    kind = "a positive int" if low == 1 else "a non-negative int" if low == 0 else "an int"
    if number is None or number < low:
        raise ValueError(f"{argument} must be {kind}, got {value!r}")
    if high is not None and number > high:
        raise ValueError(f"{argument} must be <= {high}{what}, got {number}")
    return number


def _fraction(argument: str, value: object) -> float:
    """A real number in (0, 1] as a float (numpy floats too); never a bool or a string."""
    try:
        number = None if isinstance(value, bool | str | bytes) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = None
    if number is None or not 0.0 < number <= 1.0:
        raise ValueError(f"{argument} must be in (0, 1], got {value!r}")
    return number


def _flag(argument: str, value: object) -> bool:
    if value is True or value is False:
        return value
    raise ValueError(f"{argument} must be True or False, got {value!r}")


def _arguments(
    model: object,
    speculative: object,
    batch: object,
    chunk: object,
    max_seq_len: object,
    tp_size: object,
    pp_size: object,
    pp_rank: object,
    scratch_reuse: object,
    block_reuse: object,
    util: object,
    overlap_slack: object,
    semantics: object,
    attention_dp: object = False,
    mamba_state_update: object = "default",
) -> tuple[Model, Profile, int, int, int, int, int, int, float]:
    """The one keyword validation of every public function: the model and profile rows and
    the integers as ints, or ValueError naming the argument and the allowed values. Plain
    valid values take the inline checks; anything else goes through ``_integer`` and co."""
    entry = _MODELS.get(model) if type(model) is str else None
    if entry is None:
        entry = _MODELS[_name("model", model, MODELS)]
    profile = _PROFILES.get(speculative) if type(speculative) is str else None
    if profile is None:
        profile = _PROFILES[_name("speculative", speculative, SPECULATIVE)]
    if speculative not in entry.profiles:
        raise ValueError(
            f"speculative {speculative!r} does not apply to model {model!r}; "
            f"profiles for {model}: {', '.join(entry.profiles)}"
        )
    if type(batch) is not int or batch < 1:
        batch = _integer("max_batch_size", batch, 1)
    if type(chunk) is not int or chunk < 1:
        chunk = _integer("max_num_tokens", chunk, 1)
    if type(max_seq_len) is not int or not 0 < max_seq_len <= entry.max_seq_len:
        max_seq_len = _integer("max_seq_len", max_seq_len, 1, entry.max_seq_len, f" for {model}")
    if type(tp_size) is not int or tp_size < 1:
        tp_size = _integer("tp_size", tp_size, 1)
    if type(pp_size) is not int or not 0 < pp_size <= entry.layers.layer_count:
        pp_size = _integer("pp_size", pp_size, 1, entry.layers.layer_count, " layers")
    if type(pp_rank) is not int or not 0 <= pp_rank < pp_size:
        pp_rank = _integer("pp_rank", pp_rank, 0)
        if pp_rank >= pp_size:
            raise ValueError(f"pp_rank must be in [0, {pp_size}), got {pp_rank}")
    if type(scratch_reuse) is not bool or type(block_reuse) is not bool:
        _flag("scratch_reuse", scratch_reuse)
        _flag("block_reuse", block_reuse)
    if type(overlap_slack) is not bool:
        _flag("overlap_slack", overlap_slack)
    if type(util) is not float or not 0.0 < util <= 1.0:
        util = _fraction("max_util_for_resume", util)
    if semantics != "trtllm-v2" and semantics != "exact":  # also for unhashable values
        _name("semantics", semantics, SEMANTICS)
    if type(attention_dp) is not bool:
        _flag("attention_dp", attention_dp)
    if mamba_state_update != "default" and mamba_state_update != "replay":
        _name("mamba_state_update", mamba_state_update, MAMBA_STATE_UPDATES)
    return entry, profile, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank, util


def headroom(speculative: str = "none", *, overlap_slack: bool = False) -> int:
    """H = E + G (+ K with the overlap slack): how far capacity runs ahead of history at the
    allocation peak (§2). A property of the profile alone, so it takes no model."""
    profile = _PROFILES[_name("speculative", speculative, SPECULATIVE)]
    slack = profile.draft_len if _flag("overlap_slack", overlap_slack) else 0
    return profile.extra + profile.step + slack


def _rank_counts(stack: Stack, pp_size: int, pp_rank: int) -> dict[str, int]:
    """Layers of each kind on one pipeline rank: contiguous layers, the first ``count % pp``
    ranks one more; counted from the pattern in O(pattern), never per layer."""
    base, rem = divmod(stack.layer_count, pp_size)
    start = pp_rank * base + min(pp_rank, rem)
    period = len(stack.pattern)
    laps, rest = divmod(base + (pp_rank < rem), period)
    counts = dict.fromkeys(stack.kinds, 0)
    for i, name in enumerate(stack.pattern):
        counts[name] += laps + ((i - start) % period < rest)
    return counts


# One kind's cached layers on a rank: (layers, window, sinks, kv_heads, head_dim, element
# bytes (0 for NVFP4), bytes per token not split by tp, chunk (chunked attention, else 0)). A
# life cycle group: (window, sinks, sink pages, bytes per token of its layers, sum of its
# distinct b_l, chunk). At one tp, a manager's layers are (slope of its full-attention layers,
# recurrent state, groups by (window, sinks, chunk)).
_Row = tuple[int, int | None, int, int, int, int, int, int]
_Group = tuple[int, int, int, int, int, int]
_AtTp = tuple[int, int, tuple[_Group, ...]]
# A recurrent kind on a rank: (layers, raw state bytes at tp=1, then by dimensions (§8): SSM
# heads, head dim, d_state, groups, d_conv, conv and SSM element bytes (0: NVFP4)).
_StateRow = tuple[int, int, int, int, int, int, int, int, int]
# Per manager on one rank: (name, its layers at tp=1, rows, recurrent rows).
_Plan = tuple[tuple[str, _AtTp, tuple[_Row, ...], tuple[_StateRow, ...]], ...]


def _heads_bytes(heads: int, head_dim: int, element: int) -> int:
    """K and V of ``heads`` heads per token; NVFP4 (element 0) packs two elements per byte
    plus an FP8 scale per 16 (§1)."""
    n = heads * head_dim
    return 2 * (n * element if element else -(-n // 2) + -(-n // 16))


def _elements(count: int, element: int) -> int:
    """Bytes of ``count`` elements; element 0 is NVFP4: two per byte plus an FP8 scale per 16."""
    return count * element if element else -(-count // 2) + -(-count // 16)


def _state_at_tp(states: tuple[_StateRow, ...], tp_size: int) -> tuple[int, int, int, int]:
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
        for what, value in (("num_heads", heads), ("conv_dim", conv_dim)):
            if value % tp_size:
                raise ValueError(
                    f"tp_size {tp_size} does not divide {what} {value} of the recurrent kind; "
                    "the engine splits the state evenly (use a divisor, or attention_dp=True)"
                )
        heads //= tp_size
        one_conv = _elements(conv_dim // tp_size * (d_conv - 1), conv_el)
        one_ssm = _elements(heads * head_dim * d_state, ssm_el)
        one_step = _elements(heads * head_dim + groups // tp_size * d_state, conv_el)
        state += layers * (one_conv + one_ssm)
        conv += layers * one_conv
        ssm += layers * one_ssm
        replay += layers * (one_step + 2 * heads * 4)
    return state, conv, ssm, replay


# A few (layers, tp) pairs per model: summed once, like the plans at tp 1.
_state_sums = functools.lru_cache(maxsize=256)(_state_at_tp)


def _at_tp(rows: tuple[_Row, ...], states: tuple[_StateRow, ...], tp_size: int) -> _AtTp:
    """A manager's layers at one tensor-parallel size, windows as declared (§1, §3)."""
    slope = 0
    state = _state_sums(states, tp_size)[0] if states else 0
    cycles: dict[tuple[int, int, int], int] = {}  # (w, sinks, chunk) -> b_l sum of its layers
    distinct: dict[tuple[int, int, int], list[int]] = {}  # (w, sinks, chunk) -> each b_l once
    for layers, window, sinks, kv_heads, head_dim, element, fixed, chunk in rows:
        # ceil: KV heads are replicated when there are fewer than tp ranks (§1).
        bpt = fixed + (_heads_bytes(-(-kv_heads // tp_size), head_dim, element) if kv_heads else 0)
        if window is None:
            slope += layers * bpt
            continue
        key = (window, sinks, chunk)
        if key in cycles:
            cycles[key] += layers * bpt
            if bpt not in distinct[key]:
                distinct[key].append(bpt)  # scratch reuse: one layer per (w, b_l) grows (§3)
        else:
            cycles[key] = layers * bpt
            distinct[key] = [bpt]
    ordered = []
    for (window, sinks, chunk), cycle in sorted(cycles.items()):
        sink_pages = -(-sinks // TOKENS_PER_BLOCK)
        ordered.append(
            (window, sinks, sink_pages, cycle, sum(distinct[window, sinks, chunk]), chunk)
        )
    return slope, state, tuple(ordered)


def _plan(entry: Model, speculative: str, profile: Profile, pp_size: int, pp_rank: int) -> _Plan:
    """The cached layers of each manager on one pipeline rank, as flat rows."""
    last = pp_rank == pp_size - 1  # draft layers live with the last pipeline stage
    counts = _rank_counts(entry.layers, pp_size, pp_rank) if pp_size > 1 else None
    target = [(entry.layers, counts)]
    extra_layers = entry.extra_layers.get(speculative)
    if extra_layers is not None and last:
        target.append((extra_layers, None))
    managers = [("target", target)]
    if profile.draft is not None:
        managers.append(("draft", [(profile.draft, None)] if last else []))
    plan = []
    for name, stacks in managers:
        rows: list[_Row] = []
        states: list[_StateRow] = []
        for stack, layer_counts in stacks:
            for kind_name, kind in stack.kinds.items():
                layers = kind.layers if layer_counts is None else layer_counts[kind_name]
                if not layers or kind.attention == "none":
                    continue  # no cache; the layer only takes its index (and pipeline rank)
                if kind.attention == "recurrent":
                    conv_el = 0 if kind.dtype in ("", "nvfp4") else _DTYPE_BYTES[kind.dtype]
                    ssm_el = 0 if kind.ssm_dtype in ("", "nvfp4") else _DTYPE_BYTES[kind.ssm_dtype]
                    states.append(
                        (layers, kind.state_bytes, kind.ssm_heads, kind.ssm_head_dim,
                         kind.d_state, kind.n_groups, kind.d_conv, conv_el, ssm_el)
                    )  # fmt: skip
                    continue
                element = 0 if kind.dtype in ("", "nvfp4") else _DTYPE_BYTES[kind.dtype]
                fixed = kind.bytes_per_token + kind.extra_bytes_per_token
                window = kind.chunk or kind.window  # a chunked kind's life cycle spans a chunk
                shape = (window, kind.sink_tokens, kind.kv_heads, kind.head_dim, element)
                rows.append((layers, *shape, fixed, kind.chunk))
        plan.append((name, _at_tp(tuple(rows), tuple(states), 1), tuple(rows), tuple(states)))
    return tuple(plan)


# Every (model, profile) on a single pipeline rank, planned and summed at tp=1 at import.
_PLANS = {
    (name, speculative): _plan(model, speculative, _PROFILES[speculative], 1, 0)
    for name, model in _MODELS.items()
    for speculative in model.profiles
}


def _compute(
    model: str,
    speculative: str,
    batch: int,
    chunk: int,
    max_seq_len: int,
    tp_size: int,
    pp_size: int,
    pp_rank: int,
    scratch_reuse: bool,
    block_reuse: bool,
    util: float,
    overlap_slack: bool,
    semantics: str,
    attention_dp: bool = False,
    mamba_state_update: str = "default",
) -> tuple[tuple[_Terms, ...], dict[str, CacheCost]]:
    """Every named term of the static cost per manager (§3, §4), and the CacheCost of each
    (built here, so that a never-seen ``cache_costs`` call runs one function); validates
    first."""
    entry, profile, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank, util = _arguments(
        model, speculative, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank,
        scratch_reuse, block_reuse, util, overlap_slack, semantics, attention_dp,
        mamba_state_update,
    )  # fmt: skip
    if attention_dp:
        tp_size = 1  # attention-DP: every rank holds whole KV heads and whole states (§9)
    backoff = profile.backoff if block_reuse else 0
    extra = profile.extra
    head = extra + profile.step + (profile.draft_len if overlap_slack else 0)
    tpb = TOKENS_PER_BLOCK
    exact = semantics == "exact"
    if pp_size == 1:
        plan = _PLANS[model, speculative]
    else:
        plan = _plan(entry, speculative, profile, pp_size, pp_rank)
    out: list[_Terms] = []
    costs = {}
    for name, at_tp1, rows, states in plan:
        slope, state, groups = at_tp1 if tp_size == 1 else _at_tp(rows, states, tp_size)
        per_request = state
        scratch = scratch_reuse and name == "target"  # scratch reuse: targets only (§3)
        ctx_swa = ctx_rounding = 0
        cycles = []
        # "exact": whole pages of every pool as the shim builds them for T (§3, §4).
        pools = []
        fixed_pool_bytes = batch * state
        for window, sinks, sink_pages, cycle, distinct, attn_chunk in groups:
            if not attn_chunk:
                window += backoff  # block reuse extends retention (§5), never a chunk
            if window >= max_seq_len:
                slope += cycle  # a window or chunk that reaches S is full attention (§1)
                continue
            if attn_chunk:
                # pages(C, H) = ceil((C + H - 1 + tpb - gcd(C, tpb))/tpb) = live + 1 (§3)
                live = -(-(attn_chunk + head - 1 - math.gcd(attn_chunk, tpb)) // tpb)
            else:
                live = -(-(window + head - 2) // tpb)  # pages(w, H) = live + 1 + sink pages (§3)
            per_request += (live + 1 + sink_pages) * tpb * cycle
            # Scratch reuse is for SWA only: a chunk boundary makes a whole chunk stale at once.
            ctx = distinct if scratch and not attn_chunk else cycle
            ctx_swa += ctx
            # A context chunk rounds its pages up; unless the headroom already reserves a
            # spare page (pages(w, H) > pages(w, E)), "exact" charges tpb-1 tokens more (§4).
            if exact:
                rounding = 0
                spare = attn_chunk - 1 - math.gcd(attn_chunk, tpb) if attn_chunk else window - 2
                if live == -(-(spare + extra) // tpb):
                    ctx_rounding += ctx
                    rounding = min(batch, chunk) * (tpb - 1)
                fixed_pool_bytes += batch * (live + 1 + sink_pages) * tpb * cycle
                pools.append((tpb * ctx, chunk, rounding))
            cycles.append((window, sinks, live + 1 + sink_pages, cycle, attn_chunk))
        intercept = batch * per_request + chunk * ctx_swa
        if exact and slope:  # full attention: ceil((T + B*(tpb-1))/tpb) pages, uncapped (§3)
            pools.append((tpb * slope, -1, batch * (tpb - 1)))
        full_rounding = resume_rounding = None
        if exact:
            full_rounding = batch * (tpb - 1) * slope
            ctx_rounding *= min(batch, chunk) * (tpb - 1)
            intercept += full_rounding + ctx_rounding
        if name == "draft" and len(cycles) == 1 and not slope and not state:
            # Resume watermark (§4): round a single SWA pool up so that a suspended request can
            # resume under max_util_for_resume, which the engine compares as a float32.
            slot = tpb * cycles[0][3]
            util32 = _FLOAT32.unpack(_FLOAT32.pack(util))[0]
            rounded = math.ceil(-(-intercept // slot) / util32) * slot
            resume_rounding = rounded - intercept
            intercept = rounded
        recurrent: tuple[tuple[str, int], ...] = ()
        if states:
            recurrent = _state_rows(states, tp_size, batch, profile, attention_dp,
                                    mamba_state_update)  # fmt: skip
            intercept += sum(value for _term, value in recurrent)
            # The reserved and speculative state rows are fixed pools of the runtime too (§8).
            fixed_pool_bytes += sum(value for _term, value in recurrent)
        costs[name] = _new(CacheCost, (slope, intercept))
        out.append(
            _new(_Terms, (name, slope, per_request, ctx_swa, full_rounding,
                          ctx_rounding if exact else None, resume_rounding,
                          intercept, tuple(cycles), fixed_pool_bytes, tuple(pools),
                          recurrent))
        )  # fmt: skip
    return tuple(out), costs


def _state_rows(
    states: tuple[_StateRow, ...],
    tp_size: int,
    batch: int,
    profile: Profile,
    attention_dp: bool,
    update: str,
) -> tuple[tuple[str, int], ...]:
    """The recurrent rows the engine keeps beyond one per request (§8): one slot shared by the
    CUDA-graph padding dummies (+1 for the attention-DP dummy), and under speculative decoding
    B intermediate conv windows of T = K + 1 steps with either T SSM states (default) or a
    double-buffered replay history of max(16, T) steps per slot (replay)."""
    state, conv, ssm, replay = _state_sums(states, tp_size)
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


# Pure functions of hashable arguments; typed, so 1, 1.0 and True never share an entry.
_answers = functools.lru_cache(maxsize=4096, typed=True)(_compute)


def _cached_terms(*args: object) -> tuple[_Terms, ...]:
    try:
        return _answers(*args)[0]
    except TypeError:  # an unhashable argument: name it, as any other bad value
        _arguments(*args)
        raise


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
    engine_terms: bool = False,
) -> dict[str, dict[str, int]]:
    """Every named term of the static cost, per cache manager, in bytes (§4).

    ``slope``, ``per_request``, ``ctx_swa`` and ``intercept`` always; under ``"exact"`` also
    ``full_page_rounding`` (B*(tpb-1)*slope: whole pages of full attention per request) and
    ``context_page_rounding`` (min(B, N)*(tpb-1)*ctx of each SWA life cycle whose headroom
    leaves no spare page) and ``pool_page_rounding`` (the most bytes that rounding every
    growing pool up to whole pages adds to ``slope*T + intercept`` at some T: tpb-1 tokens
    of each; ``quota_from_max_tokens`` is exactly that whole-page sum, §4);
    ``resume_rounding`` for a single-SWA-pool draft. With recurrent layers (§8)
    ``state_reserved_rows`` (the CUDA-graph padding slot, + 1 row with ``attention_dp``) and,
    under a speculative profile, ``spec_intermediate_states`` (+ ``spec_replay_history`` with
    ``mamba_state_update="replay"``). ``attention_dp=True`` holds whole KV heads and states on
    every rank (tp = 1 for the caches, §9).

    ``engine_terms=True`` adds what the engine does beside the quota (§9), reported and never
    added to the intercept or any quota: ``startup_estimate_difference`` (target, ctx_swa > 0:
    N*ctx_swa, which the startup estimate leaves out by calling the target with
    max_num_tokens = 0), ``watermark_quota`` (the engine divides a quota from max_tokens by the
    resume watermark; reported at T = max_seq_len, the least max_tokens that holds one request
    of S: ceil(quota(S) / float32(u)) - quota(S); absent where resume_rounding already applies
    it), ``cuda_graph_padding`` (the pages of the one CUDA-graph padding dummy: a generation
    request of one token at its step, capacity 1 + H, so ceil((1 + H)/tpb) pages of every
    attention life cycle; its state row is ``state_reserved_rows``) and
    ``overlap_scheduler_requests`` (B*per_request: the second batch the overlap scheduler's
    index mapper admits, B*pp*2 requests instead of B*pp).
    """
    terms = _cached_terms(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update,
    )  # fmt: skip
    out = {}
    for t in terms:
        named = {k: v for k, v in zip(_TERM_NAMES[:6], t[1:7], strict=True) if v is not None}
        named.update(t.states)  # recurrent rows beyond one per request (§8)
        named["intercept"] = t.intercept
        if t.context_page_rounding is not None and t.resume_rounding is None:
            # quota(T) rounds each growing pool up to whole pages: at most tpb-1 tokens each.
            rounding = sum(b // TOKENS_PER_BLOCK for b, _, _ in t.pools)
            named["pool_page_rounding"] = (TOKENS_PER_BLOCK - 1) * rounding
        out[t.manager] = named
    if _flag("engine_terms", engine_terms):
        head = headroom(speculative, overlap_slack=overlap_slack)
        util32 = _FLOAT32.unpack(_FLOAT32.pack(max_util_for_resume))[0]
        for t in terms:
            out[t.manager].update(
                _engine_terms(t, head, max_batch_size, max_num_tokens, max_seq_len, util32)
            )
    return out


def _engine_terms(
    terms: _Terms, head: int, batch: int, chunk: int, seq: int, util32: float
) -> dict[str, int]:
    """The engine's terms beside the quota of one manager (§9); see ``cost_terms``."""
    batch, chunk, seq = operator.index(batch), operator.index(chunk), operator.index(seq)
    named = {}
    if terms.manager == "target" and terms.ctx_swa:
        named["startup_estimate_difference"] = chunk * terms.ctx_swa
    if terms.resume_rounding is None:
        quota = _quota(terms, seq, chunk)
        named["watermark_quota"] = math.ceil(quota / util32) - quota
    # History 1 holds no stale SWA page (§3): every life cycle holds ceil((1 + H)/tpb) pages.
    paged = terms.slope + sum(cycle[3] for cycle in terms.life_cycles)
    if paged:
        pages = -(-(1 + head) // TOKENS_PER_BLOCK)
        named["cuda_graph_padding"] = pages * TOKENS_PER_BLOCK * paged
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
    max_util_for_resume: float = 0.95,
    overlap_slack: bool = False,
    semantics: str = "trtllm-v2",
    attention_dp: bool = False,
    mamba_state_update: str = "default",
) -> dict[str, CacheCost]:
    """Static cost per cache manager (§4): ``"target"``, and ``"draft"`` for a separate pool."""
    try:
        costs = _answers(
            model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
            pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
            attention_dp, mamba_state_update,
        )[1]  # fmt: skip
    except TypeError:  # an unhashable argument: name it, as any other bad value
        _arguments(
            model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
            pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
            attention_dp, mamba_state_update,
        )  # fmt: skip
        raise
    return costs.copy()


def _pool_bytes(terms: _Terms, tokens: int) -> int:
    # "exact": every pool in whole pages, ceil((min(T, cap) + rounding)/tpb) each (§4).
    total = terms.fixed_pool_bytes
    for page_bytes, cap, rounding in terms.pools:
        held = tokens if cap < 0 or tokens < cap else cap
        total += page_bytes * -(-(held + rounding) // TOKENS_PER_BLOCK)
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
) -> dict[str, int]:
    """Per manager, the quota in bytes for ``max_tokens`` tokens of full-attention history:
    ``quota(T) = T*slope + B*per_request + min(T, N)*ctx_swa`` (§4). The inverse of
    ``max_tokens_from_quota``."""
    tokens = max_tokens if type(max_tokens) is int and max_tokens >= 0 else None
    tokens = _integer("max_tokens", max_tokens, 0) if tokens is None else tokens
    terms = _cached_terms(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update,
    )  # fmt: skip
    chunk = operator.index(max_num_tokens)
    return {t.manager: _quota(t, tokens, chunk) for t in terms}


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
    tpb = TOKENS_PER_BLOCK
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
) -> dict[str, int | None]:
    """Per manager in ``quota_bytes`` (a dict like the one ``quota_from_max_tokens`` and
    ``split_budget`` return; any of the profile's managers), the largest T with
    ``quota(T) <= quota_bytes[manager]``: ``None`` when no full-attention layer bounds it (the
    manager's cost stops growing with T)."""
    terms = {
        t.manager: t
        for t in _cached_terms(
            model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size,
            pp_size, pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack,
            semantics, attention_dp, mamba_state_update,
        )
    }  # fmt: skip
    if not isinstance(quota_bytes, Mapping) or not quota_bytes:
        raise ValueError(
            f"quota_bytes must map cache managers ({', '.join(terms)}) to bytes, "
            f"e.g. {{'target': 1 << 30}}; got {quota_bytes!r}"
        )
    chunk = operator.index(max_num_tokens)
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
) -> dict[str, int]:
    """Per manager, the least quota in bytes with which ``requests`` concurrent requests (the
    batch size) each run to ``seq_len`` tokens (the max_seq_len), prompts chunked by
    ``max_num_tokens`` and speculative steps with any acceptance, without running out of pages.

    A request's capacity peaks at ``seq_len - 1 + H`` (its last step), so the full pool must
    hold ``P = R * ceil((seq_len - 1 + H) / tpb)`` pages at once, which the whole-page pools
    first reach at ``T = P*tpb - R*(tpb-1) - tpb + 1`` (§3, §4); the answer is
    ``quota_from_max_tokens`` of that T, SWA and recurrent pools as that T plans them. Under
    ``"trtllm-v2"`` (no pages) T is ``R * (seq_len - 1 + H)``.
    """
    requests = _integer("requests", requests, 1)
    seq_len = _integer("seq_len", seq_len, 1)
    terms = _cached_terms(
        model, speculative, requests, max_num_tokens, seq_len, tp_size, pp_size, pp_rank,
        scratch_reuse, block_reuse, max_util_for_resume, False, semantics,
    )  # fmt: skip
    profile = _PROFILES[speculative]
    tpb = TOKENS_PER_BLOCK
    peak = seq_len - 1 + profile.extra + profile.step  # one request's capacity at its peak
    tokens = requests * peak  # "trtllm-v2": tokens, no pages
    if semantics == "exact":
        pages = -(-peak // tpb)
        tokens = max(0, requests * (pages * tpb - tpb + 1) - tpb + 1)
    chunk = operator.index(max_num_tokens)
    return {t.manager: _quota(t, tokens, chunk) for t in terms}


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
) -> dict[str, int]:
    """Share one budget between the target and a separate draft pool (§6).

    GPU: each manager gets its intercept, the rest is split by slope; the shares sum to the
    budget. Host or disk tiers split by slope alone. Raises ValueError when the budget does
    not cover the intercepts.
    """
    budget = _integer("budget_bytes", budget_bytes, 0)
    _name("tier", tier, TIERS)
    terms = {
        t.manager: t
        for t in _cached_terms(
            model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size,
            pp_size, pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack,
            semantics, attention_dp, mamba_state_update,
        )
    }  # fmt: skip
    if "draft" not in terms:
        return {"target": budget}
    target, draft = terms["target"], terms["draft"]
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
) -> int:
    """ceil((S + H) / tpb), rounded up to a multiple of 4 (the block-table width) (§4)."""
    _, profile, _, _, seq, *_ = _arguments(
        model, speculative, 1, 1, max_seq_len, 1, 1, 0, False, False, 0.95, overlap_slack,
        "trtllm-v2",
    )  # fmt: skip
    head = profile.extra + profile.step + (profile.draft_len if overlap_slack else 0)
    blocks = -(-(seq + head) // TOKENS_PER_BLOCK)
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
    terms = _cached_terms(
        model, speculative, 1, 1, max_seq_len, 1, pp_size, pp_rank, False, block_reuse, 0.95,
        overlap_slack, "trtllm-v2",
    )  # fmt: skip
    return {
        t.manager: {_cycle_name(w, s, c): pages for w, s, pages, _, c in t.life_cycles}
        for t in terms
    }


def _cycle_name(window: int, sinks: int, chunk: int) -> str:
    if chunk:
        return f"c{chunk}"
    return f"w{window}s{sinks}" if sinks else f"w{window}"
