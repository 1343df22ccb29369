"""vLLM's KV-cache plan (the release installed) for one case built from the model's config.json.

Imported by ``vllm_runner.py`` inside the engine's virtual environment; imports no kvgen module
(but the stdlib leaf saying which config fields a deployment keeps as the checkpoint has them,
``generator/_deploy/remote_code.py``, by its path) and reads no kvgen row: every layer's cache
spec comes from the model's ``config.json`` through vLLM's own classes, in the order its engine
builds them at start-up:

1. ``vllm.config.ModelConfig`` from the config directory (HF config -> ModelConfig, with vLLM's
   own architecture resolution); ``ModelConfig.verify_with_parallel_config`` (the query-head
   refusal at tp); ``EngineArgs._set_default_chunked_prefill_and_prefix_caching_args`` (the
   prefix-caching default: on for hybrids when unset);
2. ``VllmConfig.try_verify_and_update_config``: the per-architecture hook of
   ``MODELS_CONFIG_MAP`` (``NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype`` sets the
   SSM state to float32) and ``HybridAttentionMambaModelConfig`` -> ``MambaModelConfig``
   (``mamba_cache_mode`` "align" under prefix caching, the Mamba block size);
3. the Llama/Qwen2-style attention class ``__init__`` (``LlamaAttention``, ``Qwen2Attention``)
   with the tp world size set: its KV-head assertion is vLLM's refusal;
4. ``Platform._align_hybrid_block_size`` with the model class's own
   ``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config``;
5. each Mamba layer's ``get_kv_cache_spec`` (``MambaMixer2``: one prefill checkpoint block;
   ``QwenGatedDeltaNetAttention``: one under the FlashInfer GDN prefill; ``MambaMixer`` and Kimi
   Linear's ``KimiGatedDeltaNetAttention``: none)
   and each attention layer's ``FullAttentionSpec`` with ``ModelConfig.get_num_kv_heads`` /
   ``get_head_size``; layer counts from ``ModelConfig.get_num_layers_by_block_type``.

Stubs (GPU-only parts; each is the smallest that stands in):
- ``StubVllmConfig`` (in ``vllm_runner.py``): carries the real ModelConfig, CacheConfig and
  ParallelConfig; vLLM's derived properties are borrowed from the real class.
- the platform: ``_find_non_ssm_backends`` and the backend are FlashAttention's answer on an
  H100 (``MultipleOf(16)`` kernel blocks, ``customize_spec`` unchanged); a per-token-head
  ``kv_cache_dtype`` (which FlashAttention does not take) gets vLLM's own
  ``TritonAttentionBackend`` through ``customize_attention_spec`` (``attention_backend``).
- the Mamba layer objects: an instance of the layer class made without ``__init__`` (no
  weights, no TP groups), whose ``get_state_shape`` / ``get_state_dtype`` are the model class's
  ``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config`` (the same
  calculators the layer's own methods call); the GDN layer's ``_checkpoint_alignment`` is
  what its ``__init__`` sets for the given ``gdn_prefill_backend`` (FlashInfer on SM90: 64).
- ``ModelRegistry._raise_for_unsupported`` is called before ``ModelConfig`` for an architecture
  the registry does not list (ModelConfig would raise the same after loading the processor).
- MLA layers (``mla_specs``): a plain object with the attributes ``MLAAttention``'s and
  ``DeepseekV32IndexerCache``'s ``get_kv_cache_spec`` read (cache dtype, head size, whether an
  indexer exists; the indexer's key size and uint8 dtype as ``Indexer.__init__`` passes them).
- the attention ``__init__`` check: ``get_tensor_model_parallel_world_size`` returns tp and
  ``QKVParallelLinear`` stops the constructor (the asserts come before it; Falcon-H1's
  attention builds its rotary embedding first, so ``get_rope`` stops it there).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import tempfile
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import vllm.model_executor.models.bailing_moe_linear as bailing_linear_module
import vllm.model_executor.models.falcon_h1 as falcon_h1_module
import vllm.model_executor.models.llama as llama_module
import vllm.model_executor.models.qwen2 as qwen2_module
from standins import Fields
from vllm.config import ModelConfig
from vllm.config.vllm import VllmConfig
from vllm.engine.arg_utils import EngineArgs
from vllm.model_executor.layers.mamba.gdn.kimi_gdn_linear_attn import KimiGatedDeltaNetAttention
from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import (
    FLASHINFER_GDN_CHECKPOINT_ALIGNMENT,
    QwenGatedDeltaNetAttention,
)
from vllm.model_executor.layers.mamba.linear.bailing_linear_attn import (
    BailingMoELinearAttention,
)
from vllm.model_executor.layers.mamba.mamba_mixer import MambaMixer
from vllm.model_executor.layers.mamba.mamba_mixer2 import MambaMixer2
from vllm.model_executor.models import ModelRegistry
from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
from vllm.v1.kv_cache_interface import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    SlidingWindowSpec,
    get_kv_quant_mode,
    kv_cache_uses_per_token_head_scales,
)
from vllm.v1.worker.utils import customize_attention_spec

# The Mamba layer class each hybrid's decoder builds (read in its model module).
MAMBA_LAYER = {
    "NemotronHForCausalLM": MambaMixer2,
    "GraniteMoeHybridForCausalLM": MambaMixer2,
    "Qwen3NextForCausalLM": QwenGatedDeltaNetAttention,
    "JambaForCausalLM": MambaMixer,
    "FalconH1ForCausalLM": MambaMixer2,  # FalconH1SSMDecoderLayer's mixer
    # vllm/models/kimi_k3 KimiDecoderLayer: KDA layers (no use_full_rank_gate) build it
    "KimiLinearForCausalLM": KimiGatedDeltaNetAttention,
    "BailingMoeV2_5ForCausalLM": BailingMoELinearAttention,  # lightning attention
}
# Models whose config says per layer whether it is KDA (KimiLinearConfig.is_kda_layer: the
# 1-indexed linear_attn_config kda_layers); the other layers are MLA.
KDA_MODELS = {"KimiLinearForCausalLM"}
# Parallel hybrids: the model class builds every decoder layer as one class that holds an
# attention layer and a Mamba mixer side by side (models/falcon_h1.py FalconH1Model.get_layer:
# always FalconH1ParallelHybrid, its Attention at layer i and its MambaMixer2 at L + i).
PARALLEL_HYBRIDS = {"FalconH1ForCausalLM"}
# The config field each hybrid's model class builds its decoder layers from, and the module
# whose ALL_DECODER_LAYER_TYPES maps it to a layer class (Qwen3-Next branches on the name).
DECODER_LAYERS = {
    "NemotronHForCausalLM": ("nemotron_h", "hybrid_override_pattern"),
    "GraniteMoeHybridForCausalLM": ("granitemoehybrid", "layer_types"),
    "JambaForCausalLM": ("jamba", "layers_block_type"),
    "Qwen3NextForCausalLM": (None, "layer_types"),
    "FalconH1ForCausalLM": (None, "num_hidden_layers"),  # PARALLEL_HYBRIDS: every layer both
    "KimiLinearForCausalLM": (None, "num_hidden_layers"),  # KDA_MODELS: is_kda_layer
    "BailingMoeV2_5ForCausalLM": (None, "layer_group_size"),  # LAYER_SCHEDULES
}
# Hybrids whose model class places its layers by a function of the layer index and one config
# field (models/bailing_moe_linear.py BailingMoeV25Model: is_linear_layer(i, layer_group_size)
# is a linear-attention layer, else an MLA layer).
LAYER_SCHEDULES = {"BailingMoeV2_5ForCausalLM": bailing_linear_module.is_linear_layer}
# The attention class whose __init__ asserts the KV heads split over tp.
ATTENTION_CLASS = {
    "LlamaForCausalLM": (llama_module, llama_module.LlamaAttention),
    "MistralForCausalLM": (llama_module, llama_module.LlamaAttention),
    "Phi3ForCausalLM": (llama_module, llama_module.LlamaAttention),
    "Qwen2ForCausalLM": (qwen2_module, qwen2_module.Qwen2Attention),
    "FalconH1ForCausalLM": (falcon_h1_module, falcon_h1_module.FalconH1AttentionDecoderLayer),
}


def _remote_code_fields() -> dict[str, tuple[str, ...]]:
    """Fields a deployment's config keeps as config.json has them, where the transformers class
    of the model_type rewrites them (Ling 2.5's head_dim): how a checkpoint is served, a fact
    of kvgen's ``plan --emit vllm`` (generator/_deploy/remote_code.py, a stdlib leaf loaded by
    its path: kvgen is not installed here), not a row of kvgen's sizing."""
    path = Path(__file__).resolve().parents[2] / "generator" / "_deploy" / "remote_code.py"
    spec = importlib.util.spec_from_file_location("kvgen_remote_code", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.REMOTE_CODE_FIELDS)


REMOTE_CODE_FIELDS = _remote_code_fields()
PROVENANCE = {
    "modules": [
        "vllm/config/model.py",
        "vllm/config/vllm.py",
        "vllm/engine/arg_utils.py",
        "vllm/model_executor/models/config.py",
        "vllm/model_executor/models/llama.py",
        "vllm/model_executor/models/qwen2.py",
        "vllm/model_executor/models/falcon_h1.py (FalconH1ParallelHybrid: Attention at layer "
        "i, MambaMixer2 at L + i; FalconH1AttentionDecoderLayer tp asserts)",
        "vllm/model_executor/layers/mamba/abstract.py",
        "vllm/model_executor/layers/mamba/mamba_mixer2.py",
        "vllm/model_executor/layers/mamba/mamba_utils.py",
        "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py",
        "vllm/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py",
        "vllm/models/kimi_k3/nvidia/model.py (KimiDecoderLayer: KDA where is_kda_layer, else "
        "MultiHeadLatentAttention; KimiLinearForCausalLM.get_mamba_state_*_from_config)",
        "vllm/transformers_utils/configs/kimi_linear.py (KimiLinearConfig.is_kda_layer)",
        "vllm/model_executor/models/bailing_moe_linear.py (is_linear_layer; MLA layers)",
        "vllm/model_executor/layers/mamba/linear/base.py (LinearAttention: mamba_type LINEAR)",
        "vllm/model_executor/layers/attention/mla_attention.py",
        "vllm/model_executor/models/deepseek_v2.py",
        "vllm/model_executor/models/gemma3.py (layer_types), gemma3n.py (KV sharing), "
        "llama4.py (chunked layers)",
        "vllm/platforms/interface.py",
    ],
    "functions": [
        "ModelConfig.__init__ (HF config.json -> ModelConfig)",
        "ModelConfig.verify_with_parallel_config",
        "ModelConfig.get_num_layers_by_block_type",
        "EngineArgs._set_default_chunked_prefill_and_prefix_caching_args",
        "VllmConfig.try_verify_and_update_config",
        "NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype",
        "MambaModelConfig.verify_and_update_config",
        "LlamaAttention.__init__ / Qwen2Attention.__init__ (tp asserts)",
        "<model class>.get_mamba_state_shape_from_config",
        "<model class>.get_mamba_state_dtype_from_config",
        "MambaStateShapeCalculator.mamba2_state_shape (extra_groups_for_head_shards)",
        "MambaStateShapeCalculator.linear_attention_state_shape",
        "MambaStateDtypeCalculator.linear_attention_state_dtype (mamba_cache_dtype only)",
        "MambaMixer2.get_kv_cache_spec / MambaBase.get_kv_cache_spec",
        "QwenGatedDeltaNetAttention.get_kv_cache_spec",
        "MambaStateShapeCalculator.kda_state_shape / MambaStateDtypeCalculator.kda_state_dtype",
        "KimiGatedDeltaNetAttention (MambaBase.get_kv_cache_spec)",
        "MLAAttention.get_kv_cache_spec (fp8_ds_mla state_content_bytes)",
        "DeepseekV32IndexerCache.get_kv_cache_spec",
        "get_kv_quant_mode / kv_cache_dtype_str_to_dtype (per-token-head kv_cache_dtype)",
        "customize_attention_spec with TritonAttentionBackend.customize_spec (v1/worker/utils.py,"
        " v1/attention/backends/triton_attn.py: an fp32 scale per head after K and after V)",
    ],
}


class Refused(Exception):
    """vLLM refuses the configuration; the message is the engine's reason."""


@cache
def model_config(config_json: str) -> ModelConfig:
    """vLLM's ModelConfig for a config.json (offline: a directory holding only it)."""
    directory = Path(tempfile.mkdtemp(prefix="vllm_cfg_"))
    (directory / "config.json").write_text(Path(config_json).read_text(encoding="utf-8"))
    architectures = json.loads(Path(config_json).read_text(encoding="utf-8"))["architectures"]
    if not any(arch in ModelRegistry.get_supported_archs() for arch in architectures):
        try:  # vLLM's own refusal, as ModelConfig raises it once the processor loads
            ModelRegistry._raise_for_unsupported(architectures)
        except ValueError as exc:  # its reason, without the registry's list (every release's)
            raise Refused(str(exc).split(" Supported architectures")[0]) from None
    try:
        model = ModelConfig(
            model=str(directory), tokenizer=str(directory), skip_tokenizer_init=True, dtype="auto"
        )
    except ValueError as exc:  # vLLM cannot run the architecture (its registry says why)
        raise Refused(str(exc).split("[type=")[0].strip().split("\n")[-1]) from None
    keep_remote_code_fields(model, config_json)
    return model


def keep_remote_code_fields(model: Any, config_json: str | Path) -> None:
    """Put back on ``model``'s HF config the fields its remote-code configuration class keeps
    and transformers' own class rewrites (``REMOTE_CODE_FIELDS``)."""
    for field, value in remote_code_overrides(config_json).items():
        setattr(model.hf_config, field, value)


def remote_code_overrides(config_json: str | Path) -> dict[str, Any]:
    """``REMOTE_CODE_FIELDS`` of config.json's architecture as vLLM's ``hf_overrides`` (applied
    when the engine loads the config, before its hybrid hooks size the pages)."""
    saved = json.loads(Path(config_json).read_text(encoding="utf-8"))
    fields = REMOTE_CODE_FIELDS.get((saved.get("architectures") or [""])[0], ())
    return {field: saved[field] for field in fields}


def engine_defaults(config: Any, case: dict[str, Any]) -> dict[str, Any]:
    """Run vLLM's config hooks on ``config``; return the per-model defaults they set."""
    model = config.model_config
    args = SimpleNamespace(
        enable_chunked_prefill=None, enable_prefix_caching=case.get("enable_prefix_caching")
    )
    EngineArgs._set_default_chunked_prefill_and_prefix_caching_args(args, model)
    config.cache_config.enable_prefix_caching = args.enable_prefix_caching
    ssm_before = config.cache_config.mamba_ssm_cache_dtype
    model.config_updated = False
    VllmConfig.try_verify_and_update_config(config)
    defaults: dict[str, Any] = {"enable_prefix_caching": args.enable_prefix_caching}
    if model.is_hybrid:
        defaults["mamba_cache_mode"] = config.cache_config.mamba_cache_mode
    if config.cache_config.mamba_ssm_cache_dtype != ssm_before:
        defaults["mamba_ssm_cache_dtype"] = config.cache_config.mamba_ssm_cache_dtype
        defaults["mamba_ssm_cache_dtype_set_by"] = (
            "vllm/model_executor/models/config.py "
            "NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype"
        )
    return defaults


def check_tp(config: Any) -> None:
    """vLLM's tp refusals: query heads (ModelConfig), KV heads (the attention class)."""
    model, parallel = config.model_config, config.parallel_config
    try:
        model.verify_with_parallel_config(parallel)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    entry = ATTENTION_CLASS.get(model.architecture)
    if entry is None:
        return
    module, attention = entry
    hf = model.hf_text_config

    class _Stop(Exception):
        pass

    def stop(*args: Any, **kwargs: Any) -> None:
        raise _Stop

    saved = module.get_tensor_model_parallel_world_size, module.QKVParallelLinear
    module.get_tensor_model_parallel_world_size = lambda: parallel.tensor_parallel_size
    module.QKVParallelLinear = stop
    rope = getattr(module, "get_rope", None)
    if module is falcon_h1_module:
        module.get_rope = stop  # built before QKVParallelLinear, after the asserts
    try:
        if attention is falcon_h1_module.FalconH1AttentionDecoderLayer:
            attention(config=copy.copy(hf), prefix="model.layers.0")  # sets a rope default
        elif attention is qwen2_module.Qwen2Attention:
            attention(
                hidden_size=hf.hidden_size,
                num_heads=hf.num_attention_heads,
                num_kv_heads=hf.num_key_value_heads,
                rope_parameters=getattr(hf, "rope_parameters", None),
                prefix="model.layers.0.self_attn",
            )
        else:
            attention(
                config=hf,
                hidden_size=hf.hidden_size,
                num_heads=hf.num_attention_heads,
                num_kv_heads=hf.num_key_value_heads,
                prefix="model.layers.0.self_attn",
            )
    except _Stop:
        return
    except AssertionError:
        raise Refused(
            f"{attention.__name__}.__init__ asserts that the {hf.num_key_value_heads} KV "
            f"heads split over tensor_parallel_size {parallel.tensor_parallel_size} "
            "(vllm/model_executor/models/" + module.__name__.rsplit(".", 1)[1] + ".py)"
        ) from None
    finally:
        module.get_tensor_model_parallel_world_size, module.QKVParallelLinear = saved
        if module is falcon_h1_module:
            module.get_rope = rope


def decoder_layer_kinds(model: Any) -> list[str]:
    """ "mamba", "attention" or "none" per decoder layer, as the hybrid's model class builds
    them (ModelConfig.get_num_layers_by_block_type misreads transformers 5's saved names)."""
    module_name, field = DECODER_LAYERS[model.architecture]
    keys = getattr(model.hf_text_config, field)
    if model.architecture in KDA_MODELS:
        hf = model.hf_text_config
        return ["mamba" if hf.is_kda_layer(i) else "attention" for i in range(keys)]
    if model.architecture in PARALLEL_HYBRIDS:
        return ["hybrid"] * keys  # an attention layer and a Mamba layer each
    schedule = LAYER_SCHEDULES.get(model.architecture)
    if schedule is not None:
        layers = range(model.hf_text_config.num_hidden_layers)
        return ["mamba" if schedule(i, keys) else "attention" for i in layers]
    if module_name is None:
        names = {"linear_attention": "Mamba", "full_attention": "Attention"}
        return [names.get(k, "none").lower() for k in keys]
    module = importlib.import_module(f"vllm.model_executor.models.{module_name}")
    kinds = []
    for key in keys:
        name = module.ALL_DECODER_LAYER_TYPES[key].__name__
        kinds.append("mamba" if "Mamba" in name else "attention" if "Attention" in name else "none")
    return kinds


def mamba_layers(config: Any, gdn_prefill_backend: str) -> dict[str, Any]:
    """One stub layer object per Mamba layer (see the module docstring)."""
    model = config.model_config
    model_cls, _ = ModelRegistry.resolve_model_cls(model.architecture, model_config=model)
    layer_cls = MAMBA_LAYER[model.architecture]
    kinds = decoder_layer_kinds(model)
    count = kinds.count("mamba") + kinds.count("hybrid")
    layers = {}
    for index in range(count):
        layer = layer_cls.__new__(layer_cls)
        torch.nn.Module.__init__(layer)
        layer.get_state_shape = lambda: model_cls.get_mamba_state_shape_from_config(config)
        layer.get_state_dtype = lambda: model_cls.get_mamba_state_dtype_from_config(config)
        if layer_cls is QwenGatedDeltaNetAttention:
            align = config.cache_config.mamba_cache_mode == "align"
            layer._checkpoint_alignment = (
                FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
                if align and gdn_prefill_backend == "flashinfer"
                else None
            )
            layer.vllm_config = config
        layers[f"model.layers.{index}.mixer"] = layer
    return layers


def mla_impl() -> Any:
    """The MLA layer's attention implementation as far as its cache spec reads it (0.34.0:
    the fp8_ds_mla row bytes, ``MLAAttentionImpl.get_fp8_ds_mla_row_bytes``, 656, which the
    H100's FlashMLA sparse backend does not override; only SM120's FlashInfer does)."""
    from vllm.v1.attention.backend import MLAAttentionImpl

    row_bytes = getattr(MLAAttentionImpl, "get_fp8_ds_mla_row_bytes", None)
    if row_bytes is None:  # 0.33.0: the spec holds the 656 itself
        return Fields("an MLAAttentionImpl (the H100's FlashMLA sparse)")
    return Fields(
        "an MLAAttentionImpl (the H100's FlashMLA sparse)",
        get_fp8_ds_mla_row_bytes=lambda: row_bytes(None),
    )


def mla_specs(config: Any) -> dict[str, Any]:
    """An MLA model's specs from vLLM's own layer methods: ``MLAAttention.get_kv_cache_spec``
    (fp8_ds_mla: 656 B per token) and, for DeepSeek-V3.2 (``index_topk`` in the config),
    ``DeepseekV32IndexerCache.get_kv_cache_spec`` with the key size ``Indexer.__init__`` gives
    it (index_head_dim + index_head_dim / 128 x 4 fp32 scale bytes, uint8)."""
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention
    from vllm.model_executor.models.deepseek_v2 import DeepseekV32IndexerCache

    model = config.model_config
    hf = model.hf_text_config
    indices = range(hf.num_hidden_layers)
    if model.is_hybrid:  # an MLA hybrid (Kimi Linear, Ling 2.5 linear): its attention layers only
        kinds = decoder_layer_kinds(model)
        indices = [i for i in indices if kinds[i] == "attention"]
    specs = {}
    for index in indices:
        layer = Fields(
            "vllm's MLAAttention layer",
            kv_cache_dtype=config.cache_config.cache_dtype, head_size=model.get_head_size(),
            sliding_window=None, topk_buffer_width=None,
            indexer=object() if hasattr(hf, "index_topk") else None,
            non_causal_multi_token_decode=False, impl=mla_impl(),
        )  # fmt: skip
        specs[f"model.layers.{index}.self_attn.attn"] = MLAAttention.get_kv_cache_spec(
            layer, config
        )
        if hasattr(hf, "index_topk"):
            key = Fields(
                "vllm's DeepseekV32IndexerCache",
                cache_config=config.cache_config, dtype=torch.uint8,
                head_dim=hf.index_head_dim + hf.index_head_dim // 128 * 4,
            )  # fmt: skip
            specs[f"model.layers.{index}.self_attn.indexer.k_cache"] = (
                DeepseekV32IndexerCache.get_kv_cache_spec(key, config)
            )
    return specs


def attention_specs(config: Any, dtype: torch.dtype) -> dict[str, Any]:
    model, parallel = config.model_config, config.parallel_config
    if model.use_mla:
        return mla_specs(config)
    if model.is_hybrid:
        kinds = decoder_layer_kinds(model)
        count = kinds.count("attention") + kinds.count("hybrid")
    else:
        count = model.get_num_layers_by_block_type(parallel, "attention")
    heads = model.get_num_kv_heads(parallel)
    hf = model.hf_text_config
    # Gemma 3's attention (models/gemma3.py): a "sliding_attention" layer type gets
    # config.sliding_window, the others full attention.
    types = getattr(hf, "layer_types", None) if not model.is_hybrid else None
    chunk = getattr(hf, "attention_chunk_size", None) if hasattr(hf, "no_rope_layers") else None
    # Gemma 3n (models/gemma3n.py): the last num_kv_shared_layers layers read an earlier
    # layer's cache (kv_sharing_target_layer_name), and the model runner builds no spec for them.
    shared_from = count - (getattr(hf, "num_kv_shared_layers", 0) or 0)
    specs = {}
    for index in range(count):
        if index >= shared_from:
            continue
        shape = {
            "block_size": config.cache_config.block_size,
            "num_kv_heads": heads,
            "head_size": model.get_head_size(),
            "dtype": dtype,
        }
        # vLLM's Attention.__init__: the layer's own window, else the model-level one
        # (CacheConfig.sliding_window, from ModelConfig.get_sliding_window: Mistral v0.1 and
        # Phi-3 slide every layer).
        model_window = getattr(config.cache_config, "sliding_window", None)
        if types is not None and types[index] == "sliding_attention":
            specs[f"model.layers.{index}.attn"] = SlidingWindowSpec(
                sliding_window=hf.sliding_window, **shape
            )
        elif model_window is not None and not chunk:
            specs[f"model.layers.{index}.attn"] = SlidingWindowSpec(
                sliding_window=model_window, **shape
            )
        elif chunk and hf.no_rope_layers[index] != 0:
            # Llama 4 (models/llama4.py): a RoPE layer (no_rope_layers[i] == 1) is
            # ChunkedLocalAttention over attention_chunk_size; a NoPE layer is full attention.
            specs[f"model.layers.{index}.attn"] = ChunkedLocalAttentionSpec(
                attention_chunk_size=chunk, **shape
            )
        else:
            specs[f"model.layers.{index}.attn"] = FullAttentionSpec(**shape)
    cache_dtype = config.cache_config.cache_dtype
    if kv_cache_uses_per_token_head_scales(cache_dtype):
        # Attention.get_kv_cache_spec gives the spec the dtype's KVQuantMode; the model
        # runner (gpu_model_runner.py get_kv_cache_spec) then applies the layer's backend,
        # customize_attention_spec: Triton packs an fp32 scale per head after K and after V.
        backend = attention_backend(cache_dtype)
        mode = get_kv_quant_mode(cache_dtype)
        specs = {
            name: customize_attention_spec(backend, replace(spec, kv_quant_mode=mode))
            for name, spec in specs.items()
        }
    return specs


def attention_backend(cache_dtype: str) -> Any:
    """The attention backend an H100/H200 (SM90) launch selects for a per-token-head cache:
    the first of platforms/cuda.py ``_get_backend_priorities`` (FLASH_ATTN, FLASHINFER,
    TRITON_ATTN, ...) whose ``supports_kv_cache_dtype`` takes the dtype. FlashInfer's module
    needs the flashinfer package, absent here; its supported_kv_cache_dtypes (auto, float16,
    bfloat16, fp8, fp8_e4m3, fp8_e5m2, nvfp4, nvfp4_4over6) has no per-token-head dtype."""
    from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend

    try:
        from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

        flash_attn = FlashAttentionBackend.supports_kv_cache_dtype(cache_dtype)
    except ImportError:  # under the closed loop's CUDA platform stub its kernels do not import
        flash_attn = cache_dtype in FLASH_ATTN_KV_CACHE_DTYPES
    if flash_attn:
        raise Refused(f"FLASH_ATTN takes kv_cache_dtype {cache_dtype!r}: not stubbed here")
    if TritonAttentionBackend.supports_kv_cache_dtype(cache_dtype):
        return TritonAttentionBackend
    raise Refused(f"no CUDA attention backend takes kv_cache_dtype {cache_dtype!r}")


# FlashAttentionBackend.supported_kv_cache_dtypes (v1/attention/backends/flash_attn.py), for
# where its module cannot be imported.
FLASH_ATTN_KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3")


def kv_dtype(config: Any) -> torch.dtype:
    """The cache's torch dtype as Attention.__init__ resolves it (kv_cache_dtype_str_to_dtype:
    the model dtype for "auto"; per-token-head dtypes are one byte, uint8 or int8)."""
    cache_dtype = config.cache_config.cache_dtype
    if kv_cache_uses_per_token_head_scales(cache_dtype):
        return kv_cache_dtype_str_to_dtype(cache_dtype, config.model_config)
    return config.model_config.dtype if cache_dtype == "auto" else torch.float8_e4m3fn
