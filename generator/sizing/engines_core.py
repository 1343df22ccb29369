"""The engine pool policies: the engine half of every generated sizing module.

``kvgen generate`` writes this file and its parts verbatim beside ``kvgen.sizing.sizing_core`` in
the output folder (``generated/_kvgen_runtime/``); a family's sizing module calls ``bind`` after the
interpreter's, which derives its engine rows (``ENGINE_MODELS``) from its tables, so that
``engine_capacity`` answers there without kvgen. ``kvgen._engines.capacity`` calls the same policy
functions with rows derived the same way from a loaded spec (``kvgen._model.engine_rows``), so
each policy has one implementation. Here: ``engine_capacity``, its plan caches and ``bind``;
the policies are the parts (``_PARTS``) described in docs/api.md, "The engine policies".
"""

from collections.abc import Callable
from contextlib import suppress
from types import FunctionType
from typing import Any

from . import (
    engines_options,
    engines_rows,
    engines_sglang,
    engines_trtllm,
    engines_vllm,
)
from .engines_options import _BATCH, _engine_arguments
from .engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    MODEL_DTYPES,
    SPELLINGS,
    Release,
    release,
)
from .engines_rows import (
    ENGINE_MODELS,
    UNMODELLED,
    EngineCapacity,
    EngineModel,
    NotModelled,
    engine_model,
    engine_models,
    model_dtype,
    served_tables,
)
from .engines_sglang import (
    MAMBA_FULL_MEMORY_RATIO,
    SGLANG_MAMBA_STRATEGY,
    SWA_FULL_TOKENS_RATIO,
    SglangLayout,
    SglangPlan,
    sglang_capacity,
    sglang_layout,
    sglang_plan_at,
)
from .engines_trtllm import (
    _derive_trtllm,
    _trtllm_capacity,
    trtllm_held,
    trtllm_held_in,
    trtllm_plans,
)
from .engines_vllm import (
    GDN_PREFILL_BACKEND,
    VLLM_MAMBA_CACHE_MODE,
    VllmLayout,
    VllmPlan,
    vllm_capacity,
    vllm_layout,
    vllm_plan_at,
)
from .sizing_core import install
from .sizing_kinds import _MODELS, MODELS, SPECULATIVE, TABLES
from .sizing_options import _MAX_INT, _ONE, _ZERO, _name

__all__ = [
    "ENGINE_MODELS",
    "EngineCapacity",
    "engine_capacity",
    "served_dtype",
    "trtllm_held",
    "trtllm_held_in",
    "trtllm_plans",
]


# Every name engine_capacity takes -> (its release, the hook answering for it), per family
# (``_derive_engines``).
_ENGINE_HOOKS: dict[str, tuple[Release, Any]]
# Static plans by (model, block size or SSM dtype, tp, profile, Mamba cache mode); bounded,
# one pair per family (``_derive_engines``).
_VLLM_PLANS: dict[tuple[object, ...], VllmPlan]
_SGLANG_PLANS: dict[tuple[object, ...], SglangPlan]
# What each plan reads from the model and profile alone, by (model, profile): filled on a
# model and profile's first plan, only for a pair ``_check_model`` accepted, so bounded by
# the family's models x profiles (``vllm_layout``, ``sglang_layout``).
_VLLM_LAYOUTS: dict[tuple[object, ...], VllmLayout]
# with the draft's layers and tokens
_SGLANG_LAYOUTS: dict[tuple[object, ...], tuple[SglangLayout, int, int]]
# Each model's cache dtype (``model_dtype``, at bind), and its rows as an engine serves them in
# another dtype, by (model, that dtype): filled on first use, bounded by models x 3 floats.
_MODEL_DTYPES: dict[str, str]
_SERVED_MODELS: dict[tuple[str, str], EngineModel]
# Plain calls' answers (default modes, int sizes, str names) by the arguments as given.
_ENGINE_ANSWERS: dict[tuple[object, ...], EngineCapacity]


def _check_model(model: object, speculative: object) -> EngineModel:
    """The model's rows, the profile checked to apply to it; else ValueError naming them."""
    name = model if type(model) is str and model in _MODELS else _name("model", model, MODELS)
    profile = speculative
    if type(profile) is not str or profile not in SPECULATIVE:
        profile = _name("speculative", speculative, SPECULATIVE)
    if profile not in _MODELS[name].profiles:
        raise ValueError(f"speculative {profile!r} does not apply to model {name!r}")
    entry: EngineModel = ENGINE_MODELS[name]
    return entry


def _sglang_drafts(entry: EngineModel, profile: str) -> EngineModel:
    """``entry`` where SGLang's model plans the profile (checked by ``_check_model``), else
    ``NotModelled`` with the reason."""
    if profile != "none" and not entry.drafts[profile].sglang_draft_tokens:
        reason = entry.drafts[profile].sglang_unmodelled
        if reason:
            raise NotModelled(f"speculative {profile!r}: {UNMODELLED[reason]}", reason)
        raise NotModelled(
            f"speculative {profile!r} is not modelled for engine 'sglang' (EAGLE3, MTP, NGRAM "
            "and separate draft model profiles are)"
        )
    return entry


def engine_capacity(
    model: str,
    budget_bytes: int,
    *,
    engine: str,
    max_seq_len: int,
    max_num_tokens: int,
    block_size: int | None = None,
    speculative: str = "none",
    tp_size: int = 1,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    async_scheduling: bool = True,
    mamba_cache_mode: str = VLLM_MAMBA_CACHE_MODE,
    gdn_prefill_backend: str = GDN_PREFILL_BACKEND,
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
    ssm_dtype: str | None = None,
    pp_size: int = 1,
    pp_rank: int = 0,
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY,
    heterogeneous_vocab: bool = False,
    dtype: str | None = None,
) -> EngineCapacity:
    """What ``engine`` (``NAME[==VERSION]`` of ``kvgen.sizing.engines_registry``: "trtllm" or
    "trtllm-v2", "vllm" 0.34.0, "sglang" 0.5.23) gives ``model`` for a KV budget of
    ``budget_bytes``: tokens, requests at ``max_seq_len`` at once, bytes of one such request,
    blocks of the pool (docs/cost-model.md §9), the cache in the dtype the engine serves
    (``served_dtype``). The keywords are described in docs/api.md, "The engine policies".
    Raises ``ValueError`` naming the argument on bad input, when the engine would refuse to
    start, and (``NotModelled``, a ValueError) for a shape or mode not modelled per engine."""
    try:
        hit = _ENGINE_HOOKS.get(engine)
    except TypeError:  # an unhashable engine: named below
        hit = None
    if hit is None:
        hit = _ENGINE_HOOKS[release(engine).spelling]  # ValueError naming the engines modelled
    found, answer = hit
    # The default modes (by identity) and plain ints pass here; any other call has every
    # argument checked, read by this engine or not (``_engine_arguments``).
    key: tuple[object, ...] | None = None
    if (
        async_scheduling is True and heterogeneous_vocab is False and ssm_dtype is None
        and dtype is None and mamba_cache_mode is VLLM_MAMBA_CACHE_MODE
        and gdn_prefill_backend is GDN_PREFILL_BACKEND
        and swa_full_tokens_ratio is SWA_FULL_TOKENS_RATIO
        and mamba_full_memory_ratio is MAMBA_FULL_MEMORY_RATIO
        and mamba_radix_cache_strategy is SGLANG_MAMBA_STRATEGY
        and type(max_num_tokens) is int and 0 < max_num_tokens <= _MAX_INT
        and (max_batch_size is _BATCH
             or (type(max_batch_size) is int and 0 < max_batch_size <= _MAX_INT))
        and (tp_size is _ONE or (type(tp_size) is int and 0 < tp_size <= _MAX_INT))
        and (block_size is None or (type(block_size) is int and 0 < block_size <= _MAX_INT))
        and ((pp_size is _ONE and pp_rank is _ZERO)
             or (type(pp_size) is int and type(pp_rank) is int and 0 <= pp_rank < pp_size))
    ):  # fmt: skip
        if (type(budget_bytes) is int and type(max_seq_len) is int and type(model) is str
                and type(speculative) is str):  # fmt: skip
            # Looked up as given, which a hit needs no check of: only answers are kept.
            key = (engine, model, budget_bytes, max_seq_len, max_num_tokens, block_size,
                   speculative, tp_size, max_batch_size, pp_size, pp_rank)  # fmt: skip
            known = _ENGINE_ANSWERS.get(key)
            if known is not None:
                return known
    else:
        _engine_arguments(locals())
    asked = (
        model, budget_bytes, max_seq_len, max_num_tokens, block_size, speculative, tp_size,
        max_batch_size, async_scheduling, mamba_cache_mode, gdn_prefill_backend,
        swa_full_tokens_ratio, mamba_full_memory_ratio, ssm_dtype, pp_size, pp_rank,
        mamba_radix_cache_strategy, heterogeneous_vocab, dtype,
    )  # fmt: skip  # in the order of engines_registry.ASKED
    if found.refuses or found.minimums:  # settings this release refuses to start with
        refusal = found.refusal(asked)
        if refusal is not None:
            raise ValueError(refusal)
    if pp_size != 1 and not found.engine.pipeline_parallel:
        raise NotModelled(
            f"pp_size {pp_size!r}: pipeline parallelism is not modelled for engine "
            f"{found.engine.label!r} here (its pools are sized for the whole model)"
        )
    capacity: EngineCapacity = answer(found, *asked)
    if key is not None:
        if len(_ENGINE_ANSWERS) >= 4096:
            _ENGINE_ANSWERS.clear()
        _ENGINE_ANSWERS[key] = capacity
    return capacity


def capacity_front(
    hooks: dict[str, tuple[Release, Callable[..., EngineCapacity]]],
) -> Callable[..., EngineCapacity]:
    """``engine_capacity`` over ``hooks`` (as ``_ENGINE_HOOKS``) with answers of its own, run by
    ``kvgen.engine_capacity`` per spec family: the checks and refusals are written once."""
    code, namespace = engine_capacity, {**globals(), "_ENGINE_HOOKS": hooks, "_ENGINE_ANSWERS": {}}
    front = FunctionType(code.__code__, namespace, code.__name__, code.__defaults__)
    front.__kwdefaults__ = code.__kwdefaults__
    return front


def served_dtype(model: str, *, engine: str, dtype: str | None = None) -> str:
    """The cache dtype ``engine`` serves ``model``'s in, launched with model dtype ``dtype``
    (None: its "auto"), which ``engine_capacity`` plans with (``Release.cache_dtype``:
    vLLM serves a float32 checkpoint in bf16); ``ValueError`` as ``engine_capacity``."""
    found = release(engine)  # ValueError naming the engines modelled
    _check_model(model, "none")  # ValueError naming the model
    if dtype is not None:
        _name("dtype", dtype, tuple(MODEL_DTYPES))
    return found.cache_dtype(_MODEL_DTYPES[model], dtype)


def _serving(
    found: Release, model: str, speculative: str, dtype: str | None
) -> tuple[str, EngineModel | None]:
    """``_served``, or ("", None) at a lookup where "auto" keeps the tables' dtype (the model
    and profile not checked yet: a known layout is of a checked pair)."""
    if dtype is None:
        try:
            spec = _MODEL_DTYPES.get(model)
        except TypeError:  # an unhashable model: named by _served
            spec = None
        if spec is not None and found.serves(spec) == spec:
            return "", None
    return _served(found, model, speculative, dtype)


def _served(
    found: Release, model: str, speculative: str, dtype: str | None
) -> tuple[str, EngineModel]:
    """The dtype ``found`` serves ``model``'s cache in ("": the tables') and the rows in it,
    the model and profile checked; ``ValueError`` where the release cannot serve ``dtype``."""
    entry = _check_model(model, speculative)
    spec = _MODEL_DTYPES[model]
    served = found.cache_dtype(spec, dtype)
    if served == spec:
        return "", entry
    rows = _SERVED_MODELS.get((model, served))
    if rows is None:
        tables = served_tables(TABLES, spec, served)
        rows = engine_model(model, tables.models[model], tables.profiles, tables.engines)
        _SERVED_MODELS[model, served] = rows
    return served, rows


def _trtllm_answer(
    found: Release, model: str, budget_bytes: int, max_seq_len: int, max_num_tokens: int,
    block_size: int | None, speculative: str, tp_size: int, max_batch_size: int,
    async_scheduling: bool, mamba_cache_mode: str, gdn_prefill_backend: str,
    swa_full_tokens_ratio: float, mamba_full_memory_ratio: float, ssm_dtype: str | None,
    pp_size: int, pp_rank: int, mamba_radix_cache_strategy: str, heterogeneous_vocab: bool,
    dtype: str | None,
) -> EngineCapacity:  # fmt: skip
    """TensorRT-LLM V2 (``engine_capacity``'s hook for it): one pipeline stage's pools, at
    a release that splits per request as that release splits (``_trtllm_capacity`` with its
    version); a ``dtype`` other than the checkpoint's is refused (``Release.cache_dtype``)."""
    if dtype is not None:
        _served(found, model, speculative, dtype)
    return _trtllm_capacity(
        model, budget_bytes, max_seq_len, max_num_tokens, block_size, speculative, tp_size,
        max_batch_size, pp_size, pp_rank, found.version if found.per_request_split else None,
    )  # fmt: skip


def _vllm_answer(
    found: Release, model: str, budget_bytes: int, max_seq_len: int, max_num_tokens: int,
    block_size: int | None, speculative: str, tp_size: int, max_batch_size: int,
    async_scheduling: bool, mamba_cache_mode: str, gdn_prefill_backend: str,
    swa_full_tokens_ratio: float, mamba_full_memory_ratio: float, ssm_dtype: str | None,
    pp_size: int, pp_rank: int, mamba_radix_cache_strategy: str, heterogeneous_vocab: bool,
    dtype: str | None,
) -> EngineCapacity:  # fmt: skip
    """vLLM (``engine_capacity``'s hook for it): the plan of these settings, cached, and what
    the budget holds in it, with the cache in the dtype the release serves (``_served``)."""
    if found.refuses_modes and speculative != "none":  # a mode this release refuses
        _check_model(model, speculative)
        refusal = found.mode_refusal(speculative, TABLES.profiles[speculative].mode)
        if refusal is not None:
            raise ValueError(refusal)
    size = found.block_size if block_size is None else block_size
    key = (model, size, tp_size, speculative, mamba_cache_mode, gdn_prefill_backend, ssm_dtype,
           heterogeneous_vocab, dtype, found.float32_served_as)  # fmt: skip
    try:
        plan = _VLLM_PLANS.get(key)
    except TypeError:  # an unhashable argument: named below
        plan = None
    if plan is None:  # every argument is checked by engine_capacity: the model and profile remain
        served, entry = _serving(found, model, speculative, dtype)
        # A layout with vLLM's use_heterogeneous_vocab, or of the rows in another dtype, is
        # kept apart: by default the same model and profile may be refused.
        layout_key: tuple[object, ...] = (model, speculative)
        if heterogeneous_vocab or served:
            layout_key = (model, speculative, heterogeneous_vocab, served)
        try:
            layout = _VLLM_LAYOUTS.get(layout_key)
        except TypeError:  # an unhashable argument: named below
            layout = None
        if layout is None:  # known layouts are of a model and profile checked before
            if entry is None:
                entry = _check_model(model, speculative)
            layout = vllm_layout(entry, speculative, heterogeneous_vocab, found.named)
            _VLLM_LAYOUTS[layout_key] = layout  # bounded: models x profiles x 2 x dtypes
        plan = vllm_plan_at(layout, int(size), int(tp_size), mamba_cache_mode,  # numpy ints too
                            gdn_prefill_backend, ssm_dtype, found.named)  # fmt: skip
        if len(_VLLM_PLANS) >= 4096:
            _VLLM_PLANS.clear()
        _VLLM_PLANS[key] = plan
    return vllm_capacity(
        plan, budget_bytes, max_seq_len, max_num_tokens, async_scheduling, mamba_cache_mode
    )


def _sglang_answer(
    found: Release, model: str, budget_bytes: int, max_seq_len: int, max_num_tokens: int,
    block_size: int | None, speculative: str, tp_size: int, max_batch_size: int,
    async_scheduling: bool, mamba_cache_mode: str, gdn_prefill_backend: str,
    swa_full_tokens_ratio: float, mamba_full_memory_ratio: float, ssm_dtype: str | None,
    pp_size: int, pp_rank: int, mamba_radix_cache_strategy: str, heterogeneous_vocab: bool,
    dtype: str | None,
) -> EngineCapacity:  # fmt: skip
    """SGLang (``engine_capacity``'s hook for it): the plan of the model, tp and SSM dtype,
    cached, and the pools the budget gives at the page size, with the cache in the dtype the
    release serves (``_served``)."""
    key_s = (model, ssm_dtype, tp_size, speculative, dtype, found.float32_served_as)
    try:
        plan_s = _SGLANG_PLANS.get(key_s)
    except TypeError:  # an unhashable argument: named below
        plan_s = None
    if plan_s is None:
        served, entry = _serving(found, model, speculative, dtype)
        layout_key: tuple[object, ...] = (
            (model, speculative, served) if served else (model, speculative)
        )
        try:
            layout_s = _SGLANG_LAYOUTS.get(layout_key)
        except TypeError:  # an unhashable argument: named below
            layout_s = None
        if layout_s is None:  # known layouts are of a model and profile checked before
            if entry is None:
                entry = _check_model(model, speculative)
            layout_s = _sglang_layout(_sglang_drafts(entry, speculative), speculative)
            _SGLANG_LAYOUTS[layout_key] = layout_s  # bounded: models x profiles x dtypes
        pools_of, draft_layers, draft_tokens = layout_s
        plan_s = sglang_plan_at(pools_of, int(tp_size), ssm_dtype or "fp32", draft_layers,
                                draft_tokens)  # fmt: skip
        if len(_SGLANG_PLANS) >= 4096:
            _SGLANG_PLANS.clear()
        _SGLANG_PLANS[key_s] = plan_s
    page = found.block_size if block_size is None else block_size
    return sglang_capacity(
        plan_s, budget_bytes, max_seq_len, page, swa_full_tokens_ratio, mamba_full_memory_ratio,
        max_batch_size, mamba_radix_cache_strategy,
    )  # fmt: skip


def _sglang_layout(entry: EngineModel, speculative: str) -> tuple[SglangLayout, int, int]:
    """SGLang's layout of a model and profile (checked by ``_check_model``), with the
    EAGLE3/MTP draft layers it adds and the tokens each verify step holds."""
    if speculative == "none":
        return sglang_layout(entry), 0, 0
    draft = entry.drafts[speculative]
    return sglang_layout(entry), draft.sglang_layers, draft.sglang_draft_tokens


# The engine policies' parts, installed in this order (each imports only those before it).
_PARTS = (engines_rows, engines_vllm, engines_sglang, engines_trtllm, engines_options)


def bind(namespace: dict[str, object]) -> None:
    """Install the engine policies over a family's namespace, after ``sizing_core.bind``
    (they read its tables, the engine rows derived from them and the interpreter installed
    there): the parts in order, then this module (``sizing_core.install``)."""
    for part in _PARTS:
        install(vars(part), namespace, exports=False)
    install(globals(), namespace)
    namespace["_derive_engines"]()  # type: ignore[operator]  # the copy over the family's globals


def _derive_engines() -> None:
    """Per family, at bind: its engine rows (``engine_models`` of its tables), its own plan
    caches (model names repeat across families), and the layout of every model and profile
    that each engine answers (what they alone decide), so that the first plan of a
    configuration is only its arithmetic (``vllm_plan_at``, ``sglang_plan_at``)."""
    global _ENGINE_HOOKS, ENGINE_MODELS, _VLLM_PLANS, _SGLANG_PLANS, _VLLM_LAYOUTS, _SGLANG_LAYOUTS
    global _MODEL_DTYPES, _SERVED_MODELS, _ENGINE_ANSWERS
    ENGINE_MODELS = engine_models(TABLES)
    _ENGINE_ANSWERS = {}
    _MODEL_DTYPES = {
        model: model_dtype(entry, TABLES.kv_cache_dtype) for model, entry in ENGINE_MODELS.items()
    }
    _SERVED_MODELS = {}
    _derive_trtllm()
    # Every engine name engine_capacity takes -> its release and the hook that answers for it
    # (this family's copy: ``bind`` rebuilt the hooks over its tables).
    hooks = globals()
    _ENGINE_HOOKS = {
        text: (found, hooks[found.engine.hooks.capacity]) for text, found in SPELLINGS.items()
    }
    _VLLM_PLANS = {}
    _SGLANG_PLANS = {}
    _VLLM_LAYOUTS = {}
    _SGLANG_LAYOUTS = {}
    for model, entry in ENGINE_MODELS.items():
        for speculative in _MODELS[model].profiles:
            # A pair an engine does not answer (NotModelled too) keeps no layout: the call
            # raises the same error.
            with suppress(ValueError):
                _VLLM_LAYOUTS[model, speculative] = vllm_layout(entry, speculative)
            with suppress(ValueError):
                _sglang_drafts(_check_model(model, speculative), speculative)  # as a call's
                _SGLANG_LAYOUTS[model, speculative] = _sglang_layout(entry, speculative)
