"""Run vLLM's own KV-cache planner on CPU for the cases given on stdin; print results as JSON.

Runs INSIDE the engine's virtual environment made by ``refresh_goldens.py`` (vLLM pinned there),
never in kvgen's: it imports no kvgen module. Input: a JSON list of cases. A case with
``hf_config`` is built from the model's config.json alone by ``vllm_from_config.py`` (vLLM's
ModelConfig, config hooks, model and layer classes; see its docstring for what runs and what is
stubbed) and is the kind of golden that can fail; a case with ``layers`` carries the layer list
kvgen's spec resolves to (attention-only families without a fixture config) and tests only the
pool planning below. Output: one JSON object per case with what vLLM computed.

What runs is vLLM's code, called in the order its engine core calls it at start-up
(``vllm/v1/engine/core.py`` ``_initialize_kv_caches``):
  ``MambaModelConfig.verify_and_update_config`` and ``Platform._align_hybrid_block_size``
  (Mamba hybrids only: Mamba cache mode and block size; attention page >= Mamba page),
  ``get_global_kv_cache_groups`` -> ``get_kv_cache_configs``
  -> ``generate_scheduler_kv_cache_config`` -> ``get_kv_cache_capacity`` (the logged
  "KV cache size" and "Maximum concurrency"),
plus ``_max_memory_usage_bytes_from_groups`` (the per-request bound the memory check uses).

Stubs (the smallest that stand in for GPU-only or model-loading parts; each named here). Each
is built on ``standins.py``: a field or API a release moved fails naming it and the line that
read it. Releases run: 0.33.0 and 0.34.0 (refresh_goldens.py RELEASES).
- ``VllmConfig``: a plain object carrying only the fields the planner reads; its properties
  ``max_concurrent_batches``, ``max_in_flight_tokens`` and ``num_prefill_lookahead_tokens``
  are vLLM's own, borrowed from the real class.
- attention backend: FlashAttention's answer on an H100, ``get_supported_kernel_block_sizes``
  -> ``[MultipleOf(16)]`` and ``customize_spec`` unchanged; no backend declares a layout, so
  the layout is vLLM's default preference, ``LBNHC``.
- model class for Mamba hybrids: ``ModelRegistry.resolve_model_cls`` returns a class whose
  Mamba state is one bf16 buffer of the spec's ``state_bytes`` (vLLM only uses the byte total).
"""

from __future__ import annotations

import inspect
import json
import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import SimpleNamespace
from typing import Any

import torch
import vllm
from pydantic import ValidationError
from standins import Fields, StandIn, bind, engine_api
from vllm.config import AttentionConfig
from vllm.config.speculative import SpeculativeConfig
from vllm.config.vllm import VllmConfig
from vllm.model_executor.models.config import MambaModelConfig
from vllm.platforms.interface import Platform
from vllm.v1.attention.backend import MultipleOf
from vllm.v1.core import kv_cache_planning as planning
from vllm.v1.core import kv_cache_utils as utils
from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder
from vllm.v1.kv_cache_interface import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
DTYPES["fp8"] = torch.float8_e4m3fn
CACHE_DTYPE = {"bf16": "auto", "fp16": "auto", "fp32": "auto", "fp8": "fp8"}
CACHE_DTYPE["fp8_ds_mla"] = "fp8_ds_mla"  # FlashMLA sparse (DeepSeek-V3.2)
# vLLM's per-token-head CacheDTypes, by the same names as kvgen's layouts (config cases only).
CACHE_DTYPE.update({name: name for name in ("fp8_per_token_head", "int8_per_token_head")})
bind(vllm)


def _borrowed(owner: Any, name: str) -> Any:
    """A property or method of vLLM's own class that a stand-in below borrows."""
    return engine_api(owner, name, "a stand-in in bench/engines/vllm_runner.py")


class StubVllmConfig(StandIn):
    """Only the fields the planner reads; the derived properties are vLLM's own."""

    stands_for = "vllm.config.VllmConfig"
    max_concurrent_batches = _borrowed(VllmConfig, "max_concurrent_batches")
    max_in_flight_tokens = _borrowed(VllmConfig, "max_in_flight_tokens")
    num_prefill_lookahead_tokens = _borrowed(VllmConfig, "num_prefill_lookahead_tokens")
    num_speculative_tokens = _borrowed(VllmConfig, "num_speculative_tokens")
    num_lookahead_tokens = _borrowed(VllmConfig, "num_lookahead_tokens")
    # 0.34.0: Mamba states aligned to 16 bytes under FlashInfer ReplaySSM only (use_replayssm,
    # off by default): a default launch aligns to 1 byte.
    use_flashinfer_replayssm = False

    def __init__(self, case: dict[str, Any]) -> None:
        self.use_v2_model_runner = False  # pp=1 (0.33.0: V1 and V2 give 2 concurrent batches)
        spec = case.get("speculative")
        self.speculative_config = None if spec is None else StubSpeculativeConfig(spec)
        self.diffusion_config = None
        self.scheduler_config = Fields(
            "vllm.config.SchedulerConfig",
            disable_hybrid_kv_cache_manager=False,
            async_scheduling=case["async_scheduling"],
            max_num_batched_tokens=case["max_num_batched_tokens"],
            enable_chunked_prefill=True,
        )
        self.cache_config = StubCacheConfig(
            block_size=case["block_size"], cache_dtype=CACHE_DTYPE[case.get("dtype", "bf16")]
        )
        # Cases built from config.json replace these with vLLM's own configs.
        self.model_config = StubModelConfig(case) if "layers" in case else None
        self.parallel_config = Fields(
            "vllm.config.ParallelConfig",
            tensor_parallel_size=1,
            pipeline_parallel_size=1,
            decode_context_parallel_size=1,
            prefill_context_parallel_size=1,
        )
        # vLLM's own, at its defaults (no HiSparse; 0.34.0's DeepSeek-V3.2 hook resolves its
        # indexer logits dtype on it: fp32 off SM100, as mqa_logits_use_mx_scales answers).
        self.attention_config = AttentionConfig()
        self.device_config = Fields("vllm.config.DeviceConfig", device_type="cuda")
        self.kv_transfer_config = None


@dataclass
class StubCacheConfig(StandIn):
    stands_for = "vllm.config.CacheConfig"
    block_size: int
    cache_dtype: str
    kv_cache_layout: str = "LBNHC"
    num_gpu_blocks_override: int | None = None
    prefix_cache_retention_interval: Any = None
    mamba_cache_mode: str = "none"
    enable_prefix_caching: bool = False  # vLLM's hybrid Mamba default here: mode "none"
    mamba_page_size_padded: int | None = None
    mamba_block_size: int | None = None
    kv_cache_dtype_skip_layers: list[str] = field(default_factory=list)
    num_gpu_blocks: int | None = None
    kv_cache_size_tokens: int | None = None
    kv_cache_max_concurrency: float | None = None
    # 0.34.0: as a launch with kv_cache_memory_bytes resolves it (the grid gives the budget);
    # read only by the planner's error hint.
    enable_extensible_kv_cache: bool = False

    def get_resolved_kv_cache_layout(self):  # type: ignore[no-untyped-def]
        from vllm.config.cache import _layout_from_name

        return _layout_from_name(self.kv_cache_layout)


def _engine_members(cls: type) -> dict[str, Any]:
    """``cls``'s own methods and properties (no dunders, no field defaults), for a stand-in
    whose fields are plain values: whatever the installed release's methods compute."""
    kinds = (property, cached_property, classmethod, staticmethod)
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("__") and (inspect.isfunction(value) or isinstance(value, kinds))
    }


# The speculative settings a launch passes that these runners carry (as kvgen emits them).
SPECULATIVE_SETTINGS = ("method", "num_speculative_tokens", "parallel_drafting",
                        "use_heterogeneous_vocab")  # fmt: skip


class StubSpeculativeConfig(
    StandIn, type("SpeculativeConfigMembers", (), _engine_members(SpeculativeConfig))
):
    """vLLM's SpeculativeConfig methods and properties (the installed release's own) over
    plain fields: the class's field defaults, the case's settings (method, width, parallel
    drafting for PARD, use_heterogeneous_vocab) and the draft model config (``draft``: a real
    or stand-in ModelConfig; else one whose hf_config gives the MTP module count). Block
    dropping only marks groups (no effect on sizes): off."""

    stands_for = "vllm.config.SpeculativeConfig"

    def __init__(self, spec: dict[str, Any], target: Any = None, draft: Any = None) -> None:
        for name, info in SpeculativeConfig.__pydantic_fields__.items():
            setattr(self, name, info.get_default(call_default_factory=True))
        for key in SPECULATIVE_SETTINGS:
            if spec.get(key):
                setattr(self, key, spec[key])
        self.target_model_config = target
        self.draft_parallel_config = None
        self.draft_model_config = draft or Fields(
            "the draft's vllm.config.ModelConfig",
            hf_config=SimpleNamespace(num_nextn_predict_layers=spec["draft_modules"]),
            verify_with_parallel_config=lambda parallel: None,  # tp 1 here; check_tp's
        )

    def use_eagle_block_drop(self) -> bool:
        return False


def speculative_refusal(spec: dict[str, Any], target: Any, draft: Any) -> dict[str, Any] | None:
    """vLLM's own validation of a launch's speculative settings: a setting SpeculativeConfig
    has no field for is refused by its pydantic validation (the engine's message, e.g.
    "use_heterogeneous_vocab: Unexpected keyword argument"), then
    ``SpeculativeConfig._verify_args`` runs on the stand-in (parallel drafting's method check,
    the vocabulary check unless use_heterogeneous_vocab, ...). ``target`` and ``draft``:
    anything with ``get_vocab_size`` (the draft's tp is checked apart: check_tp)."""
    fields = SpeculativeConfig.__pydantic_fields__
    for key in SPECULATIVE_SETTINGS:
        if spec.get(key) and key not in fields:
            try:
                SpeculativeConfig(**{key: spec[key]})
            except ValidationError as exc:
                error = exc.errors()[0]
                loc = ".".join(str(part) for part in error["loc"])
                return {"refused": f"{loc}: {error['msg']}" if loc else error["msg"]}
    stand_in = StubSpeculativeConfig(spec, target, draft)
    verify = engine_api(SpeculativeConfig, "_verify_args", "vllm_runner.speculative_refusal")
    try:
        verify(stand_in)
    except ValueError as exc:
        return {"refused": str(exc)}
    return None


def _vocab_model(vocab_size: int, stands_for: str) -> Any:
    """A model config stand-in for the vocabulary check: its vocabulary size; its tp check is
    check_tp's (run after, as before)."""
    return Fields(
        stands_for, get_vocab_size=lambda: vocab_size, verify_with_parallel_config=lambda p: None
    )


class StubModelConfig(StandIn):
    stands_for = "vllm.config.ModelConfig"

    def __init__(self, case: dict[str, Any]) -> None:
        self.max_model_len = case["max_model_len"]
        self.original_max_model_len = case["max_model_len"]
        self.dtype = torch.bfloat16
        attn = [lay for lay in case["layers"] if lay["type"] != "mamba"]
        self.use_mla = any(lay["type"] == "mla" for lay in attn)
        self._heads = attn[0].get("kv_heads", 1) if attn else 1
        self._head_dim = attn[0]["head_dim"] if attn else 1
        self.architecture = "KvgenStubHybrid"
        self.supports_kv_cache_grouping = False
        self.is_hybrid = any(lay["type"] == "mamba" for lay in case["layers"])
        self._state_bytes = max(
            (lay["state_bytes"] for lay in case["layers"] if lay["type"] == "mamba"), default=0
        )

    def get_num_kv_heads(self, parallel_config: Any) -> int:
        return self._heads

    def get_head_size(self) -> int:
        return self._head_dim


class StubBackend:
    """FlashAttention on an H100: kernel blocks of any multiple of 16 tokens."""

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec: Any = None) -> list[Any]:
        return [MultipleOf(16)]

    @staticmethod
    def customize_spec(spec: Any) -> Any:
        return spec

    @staticmethod
    def get_name() -> str:
        return "FLASH_ATTN"


def layer_spec(
    lay: dict[str, Any], config: StubVllmConfig, dtype: torch.dtype, is_draft: bool = False
) -> Any:
    kind = lay["type"]
    cache = config.cache_config
    block_size = cache.block_size
    if kind == "full":
        return FullAttentionSpec(
            block_size=block_size,
            num_kv_heads=lay["kv_heads"],
            head_size=lay["head_dim"],
            head_size_v=lay.get("v_head_dim", lay["head_dim"]),
            dtype=dtype,
            is_draft=is_draft,
        )
    if kind == "sliding":
        return SlidingWindowSpec(
            block_size=block_size,
            num_kv_heads=lay["kv_heads"],
            head_size=lay["head_dim"],
            head_size_v=lay.get("v_head_dim", lay["head_dim"]),
            dtype=dtype,
            sliding_window=lay["window"],
            is_draft=is_draft,
        )
    if kind == "chunked":
        return ChunkedLocalAttentionSpec(
            block_size=block_size,
            num_kv_heads=lay["kv_heads"],
            head_size=lay["head_dim"],
            head_size_v=lay.get("v_head_dim", lay["head_dim"]),
            dtype=dtype,
            attention_chunk_size=lay["window"],
            is_draft=is_draft,
        )
    if kind == "mla":
        return MLAAttentionSpec(
            block_size=block_size,
            num_kv_heads=1,
            head_size=lay["head_dim"],
            dtype=dtype,
            cache_dtype_str=cache.cache_dtype,
            is_draft=is_draft,
        )
    if kind == "mamba":
        # As vLLM's MambaBase.get_kv_cache_spec builds it (one state block per draft token).
        return MambaSpec(
            block_size=cache.mamba_block_size,
            shapes=((lay["state_bytes"] // 2,),),
            dtypes=(torch.bfloat16,),
            page_size_padded=cache.mamba_page_size_padded,
            mamba_cache_mode=cache.mamba_cache_mode,
            num_speculative_blocks=config.num_speculative_tokens,
        )
    raise ValueError(f"unknown layer type {kind!r}")


def align_hybrid(config: StubVllmConfig) -> None:
    """vLLM's own Mamba page alignment, with the model class and backend stubbed."""
    model = config.model_config
    state_elements = model._state_bytes // 2

    class StubModelClass:
        @staticmethod
        def get_mamba_state_shape_from_config(vllm_config: Any) -> tuple[tuple[int, ...], ...]:
            return ((state_elements,),)

        @staticmethod
        def get_mamba_state_dtype_from_config(vllm_config: Any) -> tuple[torch.dtype, ...]:
            return (torch.bfloat16,)

    from vllm.model_executor.models import ModelRegistry

    saved_resolve = ModelRegistry.resolve_model_cls
    saved_find = Platform._find_non_ssm_backends
    ModelRegistry.resolve_model_cls = lambda *a, **k: (StubModelClass, model.architecture)
    Platform._find_non_ssm_backends = classmethod(lambda cls, cfg: [StubBackend])
    try:
        Platform._align_hybrid_block_size(config, StubBackend)
    finally:
        ModelRegistry.resolve_model_cls = saved_resolve
        Platform._find_non_ssm_backends = saved_find


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    if "speculative" in case:
        target = draft = None
        if "vocab_sizes" in case:  # the spec's target and draft vocab_size
            target, draft = (
                _vocab_model(size, f"the {role}'s vllm.config.ModelConfig")
                for size, role in zip(case["vocab_sizes"], ("target", "draft"), strict=True)
            )
        refused = speculative_refusal(case["speculative"], target, draft)
        if refused is not None:
            return refused
    config = StubVllmConfig(case)
    if config.model_config.is_hybrid:
        # vLLM's own hybrid set-up: Mamba cache mode and Mamba block size, then page alignment.
        MambaModelConfig.verify_and_update_config(config)
        align_hybrid(config)
    dtype = DTYPES[case["dtype"]]
    specs = {
        f"model.layers.{lay['index']}.attn": layer_spec(lay, config, dtype)
        for lay in case["layers"]
    }
    for lay in case.get("draft_layers", []):
        specs[f"drafter.layers.{lay['index']}.attn"] = layer_spec(lay, config, dtype, True)
    return plan(config, specs, case)


def plan(config: Any, specs: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """vLLM's planner on the layer specs, in its engine core's order."""
    cache = config.cache_config
    groups = planning.get_global_kv_cache_groups(config, [specs])
    budget = case["budget_bytes"]
    builder = get_kv_cache_config_builder(config)
    request_bytes = planning._max_memory_usage_bytes_from_groups(builder, config, groups)
    bytes_per_block = planning._pool_bytes_per_block_from_builder(builder, config, groups)
    try:
        (kv_config,) = planning.get_kv_cache_configs(config, [specs], [budget], groups)
    except ValueError as exc:
        # The engine refuses to start: one request at max_model_len does not fit.
        fits = planning._estimate_max_model_len_from_groups(
            builder, config, groups, budget - bytes_per_block
        )
        return {
            "error": str(exc).split("(")[0].strip(),
            "request_bytes": request_bytes,
            "bytes_per_block": bytes_per_block,
            "estimated_max_model_len": fits,
        }
    sched = utils.generate_scheduler_kv_cache_config([kv_config])
    cache.block_size = min(g.kv_cache_spec.block_size for g in sched.kv_cache_groups)
    kv_tokens, concurrency = utils.get_kv_cache_capacity(config, sched)
    layers_in_groups = [len(g.layer_names) for g in groups]
    out = {
        "kv_tokens": kv_tokens,
        "max_concurrency": concurrency,
        "num_blocks": kv_config.num_blocks,
        "request_bytes": request_bytes,
        "bytes_per_block": bytes_per_block,
        "attention_block_size": cache.block_size,
        "num_groups": len(groups),
        "group_size": max(layers_in_groups),
        "padding_layers": sum(max(layers_in_groups) - n for n in layers_in_groups),
        "mamba_page_size_padded": cache.mamba_page_size_padded,
        "mamba_block_size": cache.mamba_block_size,
    }
    spec = config.speculative_config
    if spec is not None and spec.parallel_drafting:
        # What a parallel drafter (PARD) reserves per request each step: the scheduler's
        # extra query slots and allocate_slots' lookahead, neither of which sizes the pool.
        out["draft_slots_per_request"] = spec.max_num_new_slots_for_drafting
        out["num_lookahead_tokens"] = config.num_lookahead_tokens
    return out


def run_config_case(case: dict[str, Any]) -> dict[str, Any]:
    """A case whose layers come from the model's config.json (``vllm_from_config``)."""
    import vllm_from_config as from_config
    from vllm.config import CacheConfig, ParallelConfig

    config = StubVllmConfig(case)
    try:
        model = from_config.model_config(case["hf_config"])
    except from_config.Refused as exc:
        return {"refused": str(exc)}
    model.max_model_len = case["max_model_len"]
    config.model_config = model
    config.cache_config = CacheConfig(
        block_size=case["block_size"], cache_dtype=CACHE_DTYPE[case.get("dtype", "bf16")]
    )
    config.cache_config.kv_cache_layout = "LBNHC"  # as StubCacheConfig: no backend preference
    config.parallel_config = ParallelConfig(tensor_parallel_size=case["tp"])
    config.compilation_config = Fields("vllm.config.CompilationConfig", static_forward_context={})
    try:
        defaults = from_config.engine_defaults(config, case)
        from_config.check_tp(config)
    except from_config.Refused as exc:
        return {"refused": str(exc)}
    cache = config.cache_config
    specs: dict[str, Any] = {}
    if model.is_hybrid:
        layers = from_config.mamba_layers(config, case.get("gdn_prefill_backend", "flashinfer"))
        config.compilation_config.static_forward_context.update(layers)
        saved_find = Platform._find_non_ssm_backends
        Platform._find_non_ssm_backends = classmethod(lambda cls, cfg: [StubBackend])
        try:
            Platform._align_hybrid_block_size(config, StubBackend)
        finally:
            Platform._find_non_ssm_backends = saved_find
    specs.update(from_config.attention_specs(config, from_config.kv_dtype(config)))
    if model.is_hybrid:
        for name, layer in layers.items():
            specs[name] = layer.get_kv_cache_spec(config)
    draft = None
    if "draft_hf_config" in case:
        draft = from_config.model_config(case["draft_hf_config"])
    if "speculative" in case:
        refused = speculative_refusal(
            case["speculative"],
            _vocab_model(model.get_vocab_size(), "the target's vllm.config.ModelConfig"),
            None
            if draft is None
            else _vocab_model(draft.get_vocab_size(), "the draft's vllm.config.ModelConfig"),
        )
        if refused is not None:
            return refused
    if draft is not None:
        # A separate draft model (speculative method "draft_model"): its attention layers
        # join the target's KV pool, each spec marked is_draft, with the draft's own shapes.
        draft_config = Fields(
            "the draft's VllmConfig",
            model_config=draft,
            parallel_config=config.parallel_config,
            cache_config=cache,
        )
        try:
            from_config.check_tp(draft_config)
        except from_config.Refused as exc:
            return {"refused": f"draft model: {exc}"}
        for name, spec in from_config.attention_specs(
            draft_config, from_config.kv_dtype(config)
        ).items():
            specs[f"draft_model.{name}"] = replace(spec, is_draft=True)
    for index in range(case.get("draft_attention_layers", 0)):
        # An MTP drafter's decoder layer: one more full-attention layer of the target's shape.
        spec = specs[next(n for n in specs if n.endswith(".attn"))]
        specs[f"drafter.layers.{index}.attn"] = FullAttentionSpec(
            block_size=spec.block_size, num_kv_heads=spec.num_kv_heads,
            head_size=spec.head_size, head_size_v=spec.head_size_v, dtype=spec.dtype,
            is_draft=True,
        )  # fmt: skip
    out = plan(config, specs, case)
    attention = [s for s in specs.values() if isinstance(s, FullAttentionSpec)]
    if attention and attention[0].state_content_bytes is not None and not model.use_mla:
        # A backend-packed layout (per-token-head scales): what vLLM stores per head and token.
        out["kv_cache_dtype"] = cache.cache_dtype
        out["attention_backend"] = from_config.attention_backend(cache.cache_dtype).get_name()
        out["state_content_bytes"] = attention[0].state_content_bytes
    mamba = [s for s in specs.values() if isinstance(s, MambaSpec)]
    if mamba:
        out["mamba_page_bytes"] = mamba[0].real_page_size_bytes
        out["mamba_state_blocks"] = mamba[0].max_memory_usage_bytes(config) // (
            mamba[0].page_size_bytes
        )
        out["mamba_ssm_dtype"] = str(mamba[0].dtypes[-1]).removeprefix("torch.")
        out["mamba_cache_mode"] = cache.mamba_cache_mode
    out["engine_defaults"] = defaults
    return out


def main() -> int:
    cases = json.load(sys.stdin)
    out = {"engine": "vllm", "version": vllm.__version__, "results": []}
    for case in cases:
        run = run_config_case if "hf_config" in case else run_case
        out["results"].append({"id": case["id"], **run(case)})
    if any("hf_config" in case for case in cases):
        import vllm_from_config

        out["config_provenance"] = vllm_from_config.PROVENANCE
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
