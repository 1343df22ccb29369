"""One spec, every engine: what TensorRT-LLM V2, vLLM and SGLang allocate for the same model.

``engine_capacity(family, model, budget_bytes, engine=..., max_seq_len=..., max_num_tokens=...)``
answers, for a loaded ``kvgen._spec.models.Family``, the quantities an engine reports or uses for a
KV budget: tokens the cache holds, how many requests at ``max_seq_len`` fit at once, the bytes one
such request needs, and the number of blocks (pages) of the pool. Each engine's pool policy
lives in its module, pinned to an engine version and written as named terms:

- ``"trtllm"`` (``"trtllm-v2"``): TensorRT-LLM 38198e34 by default (docs/cost-model.md §11),
  ``"trtllm==early-2026"`` the earlier revision (§4); the generated module answers, ``_trtllm``;
- ``"vllm"``: vLLM 0.33.0, ``_vllm`` (verified against vLLM's own planner output);
- ``"sglang"``: SGLang 0.5.23, ``_sglang`` (verified against its own pool sizing).

Each is a value of ``kvgen.sizing.engines_registry`` (its releases, defaults and the hook that
answers for it here: ``_trtllm_answer``, ``_vllm_answer``, ``_sglang_answer``). Engine defaults are
the keyword defaults. ``POLICY_TERMS`` names each policy and says what it
does (docs/cost-model.md §9); ``kvgen compare`` cites them.

``engine_capacity`` is the sizing runtime's own (``kvgen.sizing.engines_core``: its argument
checks, the release's refusals, the answers of plain calls by their arguments), run per family
object over these hooks, which take the family first (``_FRONTS``); the static part of each
plan is cached per (family object, model, settings), so a warm call is a look-up.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from kvgen._engines import _sglang, _trtllm, _vllm
from kvgen.sizing import engines_core, engines_registry
from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    SPELLINGS,
    TRTLLM,
    Release,
    default_release,
)
from kvgen.sizing.engines_rows import EngineCapacity, NotModelled
from kvgen.sizing.engines_sglang import (
    sglang_capacity,
)
from kvgen.sizing.engines_vllm import (
    GDN_PREFILL_BACKEND,
    VLLM_NAMED,
    vllm_capacity,
)
from kvgen.sizing.sizing_options import _integer

__all__ = [
    "ENGINES",
    "ENGINE_VERSIONS",
    "POLICY_TERMS",
    "EngineCapacity",
    "NotModelled",
    "engine_capacity",
    "sglang_capacity",
    "trtllm_capacity",
    "vllm_capacity",
]

if TYPE_CHECKING:
    from kvgen._spec.models import Family, Model, Speculative

# TensorRT-LLM's KV cache manager V2 (kvgen's model), vLLM and SGLang, with their pins: each
# engine's label (what output prints) and its default release, as output prints it.
ENGINE_VERSIONS = {
    engine.label: default_release(engine).shown for engine in engines_registry.ENGINES
}
ENGINES = tuple(ENGINE_VERSIONS)
POLICY_TERMS = {
    "group_padding_layers": "vLLM cuts a hybrid into groups of equal layer count; the missing "
    "layers of a short group still take a page in every block",
    "null_block": "vLLM never hands out one block of the pool; a request at max_seq_len must "
    "fit in the rest",
    "swa_in_flight_bound": "vLLM reserves window - 1 + the whole in-flight token budget "
    "(2 x max_num_batched_tokens under async scheduling) per request on every sliding group",
    "mamba_page_unification": "vLLM grows the attention block until a page holds a Mamba "
    "state, and pads the Mamba page to it",
    "mamba_align_mode": "vLLM turns prefix caching on for hybrids by default, which selects "
    "mamba_cache_mode align: each Mamba group keeps the running state, the last block's and a "
    "prefill checkpoint per request (3 + K blocks; Gated DeltaNet's checkpoint only under "
    "FlashInfer's prefill, which puts blocks on 64 tokens)",
    "vllm_fp32_ssm_state": "vLLM keeps the SSM state in the spec's mamba_ssm_cache_dtype, fp32 "
    "for Nemotron-H (NemotronHForCausalLMConfig sets mamba_ssm_cache_dtype)",
    "full_length_layers": "SGLang sizes sliding layers full length unless the architecture is "
    "on its hybrid-SWA list",
    "swa_ratio": "SGLang's sliding pool is a fixed 0.8 of the full pool's tokens, whatever the "
    "window",
    "mamba_memory_ratio": "SGLang gives 0.9/1.9 of the budget to recurrent state slots first",
    "fp32_ssm_state": "SGLang keeps the SSM part of a recurrent state in fp32 by default",
    "mamba_running_requests": "SGLang runs at most one request per 5 recurrent state slots "
    "under the extra_buffer Mamba radix cache strategy a CUDA launch resolves (3 under "
    "no_buffer): resolve_max_num_reqs caps max_running_requests at slots // ratio, and refuses "
    "to start below ratio slots",
    "mamba_spec_states": "SGLang's EAGLE/MTP keeps speculative_num_draft_tokens intermediate "
    "recurrent states per running request (max_running_requests, at most one per 5 slots), "
    "solved with the state slots out of the same share",
    "encoder_tokens_in_pool": "SGLang runs an encoder-decoder model (Mllama) in its one token "
    "pool: every text layer, cross-attention ones included, has a buffer per slot, and each "
    "request's encoder (image) tokens take slots before its text; a multimodal model's budget "
    "first loses SGLANG_VLM_CACHE_SIZE_MB (100 MiB) to the cache SGLang allocates after sizing",
    "swa_pages_per_request": "TensorRT-LLM charges each of B requests ceil((w+H-2)/tpb)+1 "
    "pages per sliding life cycle plus a per-token context term (docs/cost-model.md §4)",
    "recurrent_state_slots": "TensorRT-LLM holds one recurrent state per request for all B "
    "requests up front (docs/cost-model.md §8)",
}


# Static plans by (id(family), model, settings). An entry keeps its family object alive, so an
# id is never reused while its entry exists; the cache is emptied when it grows past the bound.
_CACHE: dict[tuple[object, ...], tuple[Family, object]] = {}
_CACHE_BOUND = 4096


def _remember(key: tuple[object, ...], family: Family, plan: object) -> None:
    if len(_CACHE) >= _CACHE_BOUND:
        _CACHE.clear()
    _CACHE[key] = (family, plan)


def _positive(name: str, value: object) -> int:
    return _integer(name, value, 1)  # numpy ints too, at most 64 bits, never a bool or float


def _family(family: object) -> None:
    """ValueError unless ``family`` is a loaded spec (checked where a plan is built: a warm
    call finds its family's plan by identity)."""
    from kvgen._spec.models import Family

    if not isinstance(family, Family):
        kind = type(family).__name__
        raise ValueError(f"family must be a kvgen.Family (kvgen.load_family(path)), got {kind}")


def _model(family: Family, name: str) -> Model:
    for model in family.models:
        if model.name == name:
            return model
    names = ", ".join(m.name for m in family.models)
    raise ValueError(f"model must be one of {names}; got {name!r}")


def _profile(family: Family, model: str, name: str) -> Speculative | None:
    """The speculative profile ``name`` (None for "none"), checked to apply to ``model``."""
    if name == "none":
        return None
    for profile in family.speculative:
        if profile.name == name:
            if not profile.applies_to(model):
                raise ValueError(f"speculative {name!r} does not apply to model {model!r}")
            return profile
    names = ", ".join(family.profile_names)
    raise ValueError(f"speculative must be one of {names}; got {name!r}")


def engine_capacity(
    family: Family,
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
    mamba_cache_mode: str = _vllm.VLLM_MAMBA_CACHE_MODE,
    gdn_prefill_backend: str = GDN_PREFILL_BACKEND,
    swa_full_tokens_ratio: float = _sglang.SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = _sglang.MAMBA_FULL_MEMORY_RATIO,
    ssm_dtype: str | None = None,
    pp_size: int = 1,
    pp_rank: int = 0,
    mamba_radix_cache_strategy: str = _sglang.MAMBA_STRATEGY,
    heterogeneous_vocab: bool = False,
    dtype: str | None = None,
) -> EngineCapacity:
    """What ``engine`` (``NAME[==VERSION]``, ``kvgen.sizing.engines_registry``) gives ``model`` of
    ``family`` for a KV budget of ``budget_bytes``.

    ``block_size`` defaults to the engine's own page size (TensorRT-LLM: the spec's
    ``tokens_per_block``; vLLM: 16; SGLang: 1). ``max_num_tokens`` is the per-iteration token
    budget (vLLM's ``max_num_batched_tokens``). Engine-specific keywords: ``max_batch_size``
    (TensorRT-LLM), ``async_scheduling``, ``mamba_cache_mode`` ("align": vLLM's default for
    hybrids, prefix caching on; "none": prefix caching off) and ``gdn_prefill_backend``
    ("flashinfer", the H100/H200 default, or "triton") (vLLM), ``swa_full_tokens_ratio``,
    ``mamba_full_memory_ratio`` and ``mamba_radix_cache_strategy`` ("extra_buffer", what an
    H100/H200 launch resolves for a recurrent hybrid; "no_buffer", "extra_buffer_lazy",
    "extra_buffer_no_overlap", or "disabled": the radix cache off, one state slot per
    ``max_batch_size``) (SGLang); ``ssm_dtype``
    None is each engine's default (SGLang: fp32; vLLM: the conv dtype, fp32 for Nemotron-H).
    ``speculative`` names a profile of the family: TensorRT-LLM takes any; vLLM takes ngram and
    the drafters that share its pool (eagle3, mtp, mtp_eagle, and a separate draft model,
    draft_target); SGLang ``"none"`` and EAGLE3 / MTP profiles on full-attention models.
    Raises ``ValueError`` naming the argument on bad input, and when the engine would refuse to
    start (vLLM: one request at ``max_seq_len`` does not fit). ``pp_size`` / ``pp_rank``:
    one pipeline stage (TensorRT-LLM; ``NotModelled`` for the others).
    ``heterogeneous_vocab``: vLLM's speculative_config use_heterogeneous_vocab (greedy draft
    sampling only), under which vLLM runs a separate draft model of another vocabulary with
    the same layers in its pool; False (vLLM's default) refuses that draft. The other engines
    size a draft whatever its vocabulary and do not read it.
    ``dtype``: the model dtype the engine is launched with (vLLM's and SGLang's ``--dtype``),
    None its "auto". A plain float cache follows it, and "auto" is not always the spec's:
    vLLM serves a float32 checkpoint in bf16, SGLang in fp16, TensorRT-LLM keeps it (each
    release's ``float32_served_as``); the answer is in the dtype the engine serves
    (``Release.cache_dtype``; a generated module's ``served_dtype`` names it). TensorRT-LLM
    has no model dtype setting: a ``dtype`` other than the checkpoint's is a ``ValueError``.
    """
    front = _FRONTS.get(id(family))
    if front is None or front[0] is not family:
        front = _front(family)
    answered: EngineCapacity = front[1](
        model, budget_bytes, engine=engine, max_seq_len=max_seq_len,
        max_num_tokens=max_num_tokens, block_size=block_size, speculative=speculative,
        tp_size=tp_size, max_batch_size=max_batch_size, async_scheduling=async_scheduling,
        mamba_cache_mode=mamba_cache_mode, gdn_prefill_backend=gdn_prefill_backend,
        swa_full_tokens_ratio=swa_full_tokens_ratio,
        mamba_full_memory_ratio=mamba_full_memory_ratio, ssm_dtype=ssm_dtype, pp_size=pp_size,
        pp_rank=pp_rank, mamba_radix_cache_strategy=mamba_radix_cache_strategy,
        heterogeneous_vocab=heterogeneous_vocab, dtype=dtype,
    )  # fmt: skip
    return answered


# Per family (by identity; the entry keeps the family alive, so an id is never reused while it
# exists): the sizing runtime's own ``engine_capacity`` (``kvgen.sizing.engines_core``: its
# argument checks, refusals and answers of plain calls, one implementation) over a namespace
# whose hooks answer from the family's spec. Emptied when it grows past the bound.
_FRONTS: dict[int, tuple[Family, Callable[..., EngineCapacity]]] = {}


def _front(family: Family) -> tuple[Family, Callable[..., EngineCapacity]]:
    """``_FRONTS``' entry of ``family``, built (``ValueError`` unless it is a loaded spec)."""
    _family(family)
    hooks = globals()
    front = engines_core.capacity_front(
        {
            text: (found, partial(hooks[found.engine.hooks.capacity], family))
            for text, found in SPELLINGS.items()
        }
    )
    if len(_FRONTS) >= _CACHE_BOUND:
        _FRONTS.clear()
    entry = _FRONTS[id(family)] = (family, front)
    return entry


def _trtllm_answer(
    family: Family, found: Release, model: str, budget_bytes: int, max_seq_len: int,
    max_num_tokens: int, block_size: int | None, speculative: str, tp_size: int,
    max_batch_size: int, async_scheduling: bool, mamba_cache_mode: str,
    gdn_prefill_backend: str, swa_full_tokens_ratio: float, mamba_full_memory_ratio: float,
    ssm_dtype: str | None, pp_size: int, pp_rank: int, mamba_radix_cache_strategy: str,
    heterogeneous_vocab: bool, dtype: str | None,
) -> EngineCapacity:  # fmt: skip
    """TensorRT-LLM V2: the policy itself, on the module bound at that page size."""
    size = getattr(family, "tokens_per_block", 0) if block_size is None else block_size
    bound = _trtllm._SIZING.get((id(family), size))  # the bound module, as sizing() finds it
    if bound is not None and bound[0] is family:
        module = bound[1]
    else:
        _family(family)
        module = _trtllm.sizing(family, size)
    capacity: EngineCapacity = module.engine_capacity(
        model, budget_bytes, engine=f"{found.engine.name}=={found.version}",
        max_seq_len=max_seq_len, max_num_tokens=max_num_tokens, speculative=speculative,
        tp_size=tp_size,
        max_batch_size=max_batch_size, pp_size=pp_size, pp_rank=pp_rank, dtype=dtype,
    )  # fmt: skip
    return capacity


def _vllm_answer(
    family: Family, found: Release, model: str, budget_bytes: int, max_seq_len: int,
    max_num_tokens: int, block_size: int | None, speculative: str, tp_size: int,
    max_batch_size: int, async_scheduling: bool, mamba_cache_mode: str,
    gdn_prefill_backend: str, swa_full_tokens_ratio: float, mamba_full_memory_ratio: float,
    ssm_dtype: str | None, pp_size: int, pp_rank: int, mamba_radix_cache_strategy: str,
    heterogeneous_vocab: bool, dtype: str | None,
) -> EngineCapacity:  # fmt: skip
    """vLLM: its plan of the spec's model at these settings (cached), then the budget."""
    if found.refuses_modes and speculative != "none":  # a mode this release refuses
        _family(family)
        _model(family, model)
        profile = _profile(family, model, speculative)
        assert profile is not None  # speculative is not "none"
        refusal = found.mode_refusal(speculative, profile.mode)
        if refusal is not None:
            raise ValueError(refusal)
    size = found.block_size if block_size is None else block_size
    key: tuple[object, ...] = (id(family), model, id(found), size, tp_size, speculative,
                               mamba_cache_mode, gdn_prefill_backend, ssm_dtype,
                               heterogeneous_vocab, dtype)  # fmt: skip
    try:
        hit = _CACHE.get(key)
    except TypeError:  # an unhashable argument: named below, never cached
        hit, key = None, ()
    if hit is not None and hit[0] is family:
        plan = cast(_vllm.VllmPlan, hit[1])
    else:
        plan = _build_vllm(
            family, model, size, tp_size, speculative, mamba_cache_mode, gdn_prefill_backend,
            ssm_dtype, heterogeneous_vocab, found.named, found, dtype,
        )  # fmt: skip
        _remember(key, family, plan)
    return vllm_capacity(
        plan, budget_bytes, max_seq_len, max_num_tokens, async_scheduling, mamba_cache_mode
    )


def _sglang_answer(
    family: Family, found: Release, model: str, budget_bytes: int, max_seq_len: int,
    max_num_tokens: int, block_size: int | None, speculative: str, tp_size: int,
    max_batch_size: int, async_scheduling: bool, mamba_cache_mode: str,
    gdn_prefill_backend: str, swa_full_tokens_ratio: float, mamba_full_memory_ratio: float,
    ssm_dtype: str | None, pp_size: int, pp_rank: int, mamba_radix_cache_strategy: str,
    heterogeneous_vocab: bool, dtype: str | None,
) -> EngineCapacity:  # fmt: skip
    """SGLang: its plan of the spec's model at this tp and SSM dtype (cached), then the
    pools of the budget at the page size."""
    key: tuple[object, ...] = (id(family), model, id(found), tp_size, speculative, ssm_dtype,
                               dtype)  # fmt: skip
    try:
        hit = _CACHE.get(key)
    except TypeError:  # an unhashable argument: named below, never cached
        hit, key = None, ()
    if hit is not None and hit[0] is family:
        plan = cast(_sglang.SglangPlan, hit[1])
    else:
        plan = _build_sglang(family, model, tp_size, ssm_dtype or "fp32", speculative, found,
                             dtype)  # fmt: skip
        _remember(key, family, plan)
    page = found.block_size if block_size is None else block_size
    return sglang_capacity(
        plan, budget_bytes, max_seq_len, page, swa_full_tokens_ratio, mamba_full_memory_ratio,
        max_batch_size, mamba_radix_cache_strategy,
    )  # fmt: skip


def _build_vllm(
    family: Family,
    model: str,
    block_size: int,
    tp_size: int,
    speculative: str,
    mamba_cache_mode: str,
    gdn_prefill_backend: str,
    ssm_dtype: str | None,
    heterogeneous_vocab: bool = False,
    named: str = VLLM_NAMED,
    served_by: Release | None = None,
    dtype: str | None = None,
) -> _vllm.VllmPlan:
    _family(family)
    for name, value, choices in (
        ("mamba_cache_mode", mamba_cache_mode, _vllm.MAMBA_CACHE_MODES),
        ("gdn_prefill_backend", gdn_prefill_backend, _vllm.GDN_PREFILL_BACKENDS),
        ("ssm_dtype", ssm_dtype, (None, *_sglang.SSM_DTYPES)),
        ("heterogeneous_vocab", heterogeneous_vocab, (False, True)),
    ):
        if value not in choices:
            raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    size = _positive("block_size", block_size)
    spec_model = _model(family, model)
    return _vllm.vllm_plan(
        family,
        spec_model,
        block_size=size,
        tp_size=_positive("tp_size", tp_size),
        speculative=_profile(family, spec_model.name, speculative),
        mamba_cache_mode=mamba_cache_mode,
        gdn_prefill_backend=gdn_prefill_backend,
        ssm_dtype=ssm_dtype,
        heterogeneous_vocab=heterogeneous_vocab,
        named=named,
        served_by=served_by,
        dtype=dtype,
    )


def _build_sglang(
    family: Family, model: str, tp_size: int, ssm_dtype: str, speculative: str,
    served_by: Release | None = None, dtype: str | None = None,
) -> _sglang.SglangPlan:  # fmt: skip
    _family(family)
    spec_model = _model(family, model)
    return _sglang.sglang_plan(
        family, spec_model, tp_size=_positive("tp_size", tp_size), ssm_dtype=ssm_dtype,
        speculative=_profile(family, spec_model.name, speculative), served_by=served_by,
        dtype=dtype,
    )  # fmt: skip


def trtllm_capacity(
    family: Family,
    model: str,
    budget_bytes: int,
    *,
    max_seq_len: int,
    max_num_tokens: int,
    block_size: int | None = None,
    speculative: str = "none",
    tp_size: int = 1,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    pp_size: int = 1,
    pp_rank: int = 0,
) -> EngineCapacity:
    """TensorRT-LLM V2's capacity (see ``_trtllm``): ``engine_capacity`` with that engine."""
    return engine_capacity(
        family, model, budget_bytes, engine=TRTLLM.name, max_seq_len=max_seq_len,
        max_num_tokens=max_num_tokens, block_size=block_size, speculative=speculative,
        tp_size=tp_size, max_batch_size=max_batch_size, pp_size=pp_size, pp_rank=pp_rank,
    )  # fmt: skip
