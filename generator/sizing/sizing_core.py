"""The sizing interpreter: the one static cost model, shared by every generated sizing module.

``kvgen generate`` writes this file verbatim into the output folder
(``generated/_kvgen_runtime/sizing_core.py``); each ``generated/<family>/sizing.py`` holds only
its family's tables (plain rows of the spec's facts: layer kinds with their layer counts,
patterns, speculative profiles) and calls ``bind``, which installs the interpreter over them.
So the modules stay stdlib-only and need no kvgen at run time: vendoring is copying the output
folder. kvgen binds the same interpreter to tables built in memory from a spec
(``kvgen._generate.sizing_context.bound_module``). The formulas are those of ``docs/cost-model.md``
§1-§6; the runtime page model (``kvgen.runtime``) derives the same numbers independently.

Here: the public functions and ``bind``; the interpreter's parts (``_PARTS``) are described in
docs/api.md, "The interpreter".
"""

# No `from __future__ import annotations`, as in the other runtime modules (NamedTuple import
# cost). Relative: the same imports in kvgen and in the output folder's copy of the runtime.
import math
import types
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from . import sizing_kinds, sizing_options, sizing_quota, sizing_split, sizing_terms
from .sizing_kinds import (
    _PROFILES,
    FAMILY,
    KV_CACHE_DTYPE,
    MANAGERS,
    MAX_SEQ_LEN,
    MODELS,
    PROFILES,
    SPEC_SHA256,
    SPECULATIVE,
    TABLES,
    TOKENS_PER_BLOCK,
    CacheCost,
    SizingTables,
    _derive_tables,
)
from .sizing_options import (
    _CHUNK_AT,
    _LIMITS,
    _MAX_INT,
    _ONE,
    _OVERLAP_SLACK_AT,
    _SEQ_LEN_AT,
    _SPECULATIVE_AT,
    _UTIL,
    _ZERO,
    SEMANTICS,
    TIERS,
    _derive_limits,
    _flag,
    _headroom,
    _integer,
    _name,
    _Options,
    _options,
    headroom,
)
from .sizing_quota import (
    _cycle_name,
    _engine_split_quota,
    _engine_terms,
    _quota,
    _shares,
    _tokens,
    swa_context_tokens,
)
from .sizing_split import _derive_split, _layers, _rank
from .sizing_terms import (
    _ANSWERS_HELD,
    _TERM_NAMES,
    _Answer,
    _answers,
    _cached_terms,
    _compute,
    _derive_answers,
)

__all__ = [
    "API_VERSION",
    "FAMILY",
    "KV_CACHE_DTYPE",
    "MANAGERS",
    "MAX_SEQ_LEN",
    "MODELS",
    "PROFILES",
    "RUNTIME_VERSION",
    "SEMANTICS",
    "SPECULATIVE",
    "SPEC_SHA256",
    "TABLES",
    "TIERS",
    "TOKENS_PER_BLOCK",
    "CacheCost",
    "SizingTables",
    "cache_costs",
    "cost_terms",
    "headroom",
    "manager_layers",
    "manager_terms",
    "max_blocks_per_seq",
    "max_tokens_from_quota",
    "pages_per_request",
    "quota_for_requests",
    "quota_from_max_tokens",
    "rank_layers",
    "split_budget",
]

# 2: model first everywhere (split_budget(model, budget_bytes)); max_tokens_from_quota takes and
# returns per-manager dicts like quota_from_max_tokens. Modules without API_VERSION are 1.
API_VERSION = 2


# ---- a warm call: its answer looked up by its arguments as given, validated on a miss ----
# A hit is a repeat of arguments validated before, so it needs no validation; a miss validates
# them (``_options``), raising what any call raises. Per family (``_derive_lookups``):
# ``_PLAIN``, a dict of the five required arguments and tp_size (its sizes of type int: a key
# no bool, float or numpy int equals, so 1, 1.0 and True never share one) of a call that
# leaves every other option at its default (the same objects: small ints and bools are
# singletons) to its CacheCost per manager (the dict a call copies); ``_GIVEN``, a typed
# cache (``functools.lru_cache(typed=True)``) of all seventeen as given to the validated
# options and answer. An unhashable argument is named by the validation.
_PLAIN: dict[tuple[object, ...], dict[str, CacheCost]] = {}
_GIVEN: Any = None


def _given(*arguments: object) -> tuple[_Options, _Answer]:
    options = _options(*arguments)
    return options, _answers(options)


def _lookup(*arguments: object) -> tuple[_Options, _Answer]:
    """The validated options and answer of a call's seventeen option arguments (in
    ``_Options``' order), from ``_GIVEN`` on a repeat."""
    try:
        found: tuple[_Options, _Answer] = _GIVEN(*arguments)
    except TypeError:  # an unhashable argument: named as any other bad value
        _options(*arguments)
        raise
    return found


def _derive_lookups() -> None:
    """Per family, at bind: its own caches of arguments as given."""
    global _PLAIN, _GIVEN
    _PLAIN = {}
    _GIVEN = lru_cache(maxsize=_ANSWERS_HELD, typed=True)(_given)


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
    options, (terms, _costs) = _lookup(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
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
        head = _headroom(_PROFILES[options[_SPECULATIVE_AT]], options[_OVERLAP_SLACK_AT])
        for t in terms:
            out[t.manager].update(_engine_terms(t, head, options))
    return out


def manager_terms(
    model: str,
    *,
    speculative: str = "none",
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    max_util_for_resume: float = 0.95,
) -> tuple[Any, ...]:
    """Each cache manager's terms under "trtllm-v2" semantics, as the runtime keeps them
    (what ``cost_terms`` names and ``trtllm_plans`` builds its pool groups from), validated
    as ``cache_costs``."""
    terms: tuple[Any, ...] = _lookup(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, False, False, max_util_for_resume,
    )[1][0]  # fmt: skip
    return terms


def manager_layers(model: str, speculative: str = "none") -> tuple[Any, ...]:
    """Each cache manager's cached layers of (model, profile), as the runtime keeps them
    (name, layer members, state rows, cross rows, life cycles; §6)."""
    _options(model, speculative, 1, 1, 1)
    return _layers(model, speculative)


def rank_layers(
    model: str,
    speculative: str = "none",
    *,
    tp_size: int = 1,
    pp_size: int = 1,
    pp_rank: int = 0,
    dcp_size: int = 1,
) -> tuple[Any, ...]:
    """Each cache manager's layers on one rank at one tp, pp and DCP size, as the runtime
    keeps them; ValueError where the engines refuse the split (§1, §8, §9)."""
    _options(model, speculative, 1, 1, 1, tp_size, pp_size, pp_rank)
    return _rank(model, speculative, pp_size, pp_rank, tp_size, dcp_size)


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
    if (
        pp_size is _ONE and pp_rank is _ZERO and dcp_size is _ONE and scratch_reuse is False
        and block_reuse is False and overlap_slack is False and attention_dp is False
        and encoder_tokens is None and max_util_for_resume is _UTIL
        and semantics == "trtllm-v2" and mamba_state_update == "default"
    ) and (
        type(max_batch_size) is type(max_num_tokens) is type(max_seq_len) is type(tp_size) is int
    ):  # fmt: skip
        # Ints of type int (no bool, float or numpy int equals one here): the model and profile
        # as given, any value equal to a name the tables hold being that name.
        key = (model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size)
        try:
            costs = _PLAIN.get(key)
        except TypeError:  # an unhashable argument: named as any other bad value
            _options(model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size)
            raise
        if costs is None:  # validated, computed and kept here alone (not in ``_ANSWERS``)
            limits = _LIMITS.get(model) if type(model) is str else None
            if (
                limits is None or type(speculative) is not str or speculative not in limits[0]
                or not 0 < max_batch_size <= _MAX_INT or not 0 < max_num_tokens <= _MAX_INT
                or not 0 < max_seq_len <= limits[1] or not 0 < tp_size <= _MAX_INT
            ):  # fmt: skip
                # The one validation: it names a bad argument (or takes a str subclass).
                options = _options(model, speculative, max_batch_size, max_num_tokens,
                                   max_seq_len, tp_size)  # fmt: skip
            else:
                options = (model, speculative, max_batch_size, max_num_tokens, max_seq_len,
                           tp_size, 1, 0, False, False, _UTIL, False, "trtllm-v2", False,
                           "default", 1, None)  # fmt: skip
            costs = _compute(options, False)[1]
            if len(_PLAIN) >= _ANSWERS_HELD:
                _PLAIN.clear()
            _PLAIN[key] = costs
        return costs.copy()
    return _lookup(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )[1][1].copy()  # fmt: skip


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
    options, (terms, _costs) = _lookup(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
    chunk = options[_CHUNK_AT]
    return {t.manager: _quota(t, tokens, chunk) for t in terms}


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
    options, (found, _costs) = _lookup(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )  # fmt: skip
    terms = {t.manager: t for t in found}
    if not isinstance(quota_bytes, Mapping) or not quota_bytes:
        raise ValueError(
            f"quota_bytes must map cache managers ({', '.join(terms)}) to bytes, "
            f"e.g. {{'target': 1 << 30}}; got {quota_bytes!r}"
        )
    chunk = options[_CHUNK_AT]
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
    ``max_num_tokens`` and speculative steps with any acceptance, without running out of pages
    (§3, §4; how, and what each semantics sizes: docs/api.md, "quota_for_requests")."""
    # requests and seq_len are the batch size and context the options check, by their names.
    requests = _integer("requests", requests, 1)
    most = MAX_SEQ_LEN[model] if type(model) is str and model in MAX_SEQ_LEN else None
    seq_len = _integer("seq_len", seq_len, 1, most, f" for {model}")
    options = _options(
        model, speculative, requests, max_num_tokens, seq_len, tp_size, pp_size, pp_rank,
        scratch_reuse, block_reuse, max_util_for_resume, False, semantics, False, "default",
        dcp_size, encoder_tokens,
    )  # fmt: skip
    terms = _cached_terms(options)
    profile = _PROFILES[options[_SPECULATIVE_AT]]
    tpb = terms[0].span  # tokens per full-attention page: tpb * dcp_size under DCP (§9)
    peak = seq_len - 1 + profile.extra + profile.step  # one request's capacity at its peak
    chunk = options[_CHUNK_AT]
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
            least = swa_context_tokens(offset, profile.extra, profile.extra + profile.step,
                                       requests, chunk, rounding, TOKENS_PER_BLOCK)  # fmt: skip
            tokens = max(tokens, least)
        if exact:
            out[t.manager] = _quota(t, tokens, chunk)
        else:
            out[t.manager] = _engine_split_quota(model, t, tokens, chunk, requests, scratch_reuse)
    return out


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
    terms = _lookup(
        model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size, pp_size,
        pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack, semantics,
        attention_dp, mamba_state_update, dcp_size, encoder_tokens,
    )[1][0]  # fmt: skip
    return _shares(terms, budget, tier)


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
    dcp = dcp_size
    if type(dcp) is not int or not 0 < dcp <= _MAX_INT:
        dcp = _integer("dcp_size", dcp_size, 1)
    head = _headroom(_PROFILES[options[_SPECULATIVE_AT]], options[_OVERLAP_SLACK_AT])
    blocks = -(-(options[_SEQ_LEN_AT] + head) // (TOKENS_PER_BLOCK * dcp))
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


# ---- binding: a family's tables to this interpreter ----
# The version of the interface between a generated sizing module and this runtime (its
# ``TABLES`` and the public names ``bind`` installs; docs/api.md, "Versions"): bump it when
# either changes. A module generated for version N runs on a runtime of version N or newer
# down to MIN_GENCODE_VERSION (protobuf's rule: the runtime at least as new as the gencode);
# kvgen reads an output folder in that window (``kvgen._engines.planner.load_sizing``). 2: the
# tables as one value (TABLES), each layer written once (the engine rows derived at bind).
RUNTIME_VERSION = 2
MIN_GENCODE_VERSION = 2
# The interpreter's modules, installed in this order (each imports only those before it).
_PARTS = (sizing_kinds, sizing_options, sizing_split, sizing_terms, sizing_quota)
# Names of the sizing runtime itself, never copied into a family's namespace (nor its modules).
_NEVER_INSTALLED = frozenset(
    {"RUNTIME_VERSION", "MIN_GENCODE_VERSION", "bind", "install", "require_version", "_PARTS",
     "_DEFINITIONS", "_definitions"}
)  # fmt: skip


def require_version(gencode: int, module: str) -> None:
    """ImportError unless ``module``, generated for sizing runtime ``gencode``, is in this
    runtime's window: at least as new a runtime, down to MIN_GENCODE_VERSION. Generation
    writes the runtime beside the modules, so a mismatch means part of an output folder was
    copied without the rest, or an older output folder beside a newer runtime."""
    if not MIN_GENCODE_VERSION <= gencode <= RUNTIME_VERSION:
        raise ImportError(
            f"{module} was generated for kvgen sizing runtime {gencode}; {__name__} is "
            f"{RUNTIME_VERSION} (it runs modules of {MIN_GENCODE_VERSION} to "
            f"{RUNTIME_VERSION}): run `kvgen generate`, which writes both into one folder"
        )


def install(source: dict[str, object], namespace: dict[str, object], exports: bool = True) -> None:
    """Copy a runtime module's definitions (``source``, its globals) into ``namespace``: each
    function it defines is rebuilt over ``namespace`` (the same code, so the names it reads are
    the family's tables and the other functions installed there, exactly as if the runtime
    were written out in the family's module); every other name is shared, unless the
    namespace already defines it. ``__all__`` grows by the runtime's (with ``exports``)."""
    module = namespace.get("__name__")
    functions, values = _definitions(source)
    for name, value in functions:
        function = types.FunctionType(
            value.__code__, namespace, name, value.__defaults__, value.__closure__
        )
        function.__kwdefaults__ = value.__kwdefaults__
        function.__doc__ = value.__doc__
        function.__qualname__ = value.__qualname__
        function.__annotations__ = value.__annotations__
        function.__module__ = module  # type: ignore[assignment]
        namespace[name] = function
    for name, value in values:
        if name not in namespace:
            namespace[name] = value
    if exports:
        exported = namespace.get("__all__", [])
        assert isinstance(exported, list)
        namespace["__all__"] = [*exported, *source.get("__all__", [])]  # type: ignore[misc]


# What ``install`` copies from each runtime module, sorted out once per module (every family's
# import binds the same modules): by module name, (its globals, functions it defines, the
# rest); the globals are kept so that a module imported afresh is sorted out afresh.
_DEFINITIONS: dict[object, tuple[dict[str, object], list[Any], list[Any]]] = {}


def _definitions(source: dict[str, object]) -> tuple[list[Any], list[Any]]:
    known = _DEFINITIONS.get(source.get("__name__"))
    if known is not None and known[0] is source:
        return known[1], known[2]
    functions, values = [], []
    for name, value in source.items():
        if name.startswith("__") or name in _NEVER_INSTALLED:
            continue
        if isinstance(value, types.ModuleType) and value.__package__ == __package__:
            continue  # a module of the runtime itself (a part a core imports to bind it)
        if isinstance(value, types.FunctionType) and value.__globals__ is source:
            functions.append((name, value))
        else:
            values.append((name, value))
    _DEFINITIONS[source.get("__name__")] = (source, functions, values)
    return functions, values


def bind(namespace: dict[str, object]) -> None:
    """Make ``namespace`` (the globals of a module that defines a family's ``TABLES``, a
    ``SizingTables``) that family's sizing module: the tables' fields installed as the names
    the interpreter reads (FAMILY, SPEC_SHA256, TOKENS_PER_BLOCK, KV_CACHE_DTYPE, _MODELS,
    _PROFILES) with this sizing runtime's RUNTIME_VERSION, the interpreter's modules installed over
    it in order (``install``; the public names are this module's ``__all__``), then what
    depends only on the tables precomputed (``_derive``)."""
    tables = namespace["TABLES"]
    assert isinstance(tables, SizingTables)
    namespace.update(
        FAMILY=tables.family, SPEC_SHA256=tables.spec_sha256,
        TOKENS_PER_BLOCK=tables.tokens_per_block, KV_CACHE_DTYPE=tables.kv_cache_dtype,
        _MODELS=tables.models, _PROFILES=tables.profiles, RUNTIME_VERSION=RUNTIME_VERSION,
    )  # fmt: skip
    for part in _PARTS:
        install(vars(part), namespace, exports=False)
    install(globals(), namespace)
    namespace["_derive"]()  # type: ignore[operator]  # the copy over the family's globals


def _derive() -> None:
    """Per family, at bind (its namespace is this function's globals): what each part of the
    interpreter derives from the family's tables, each part's own."""
    _derive_tables()
    _derive_limits()
    _derive_split()
    _derive_answers()
    _derive_lookups()
