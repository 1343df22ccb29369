"""Launch settings that make an engine allocate exactly kvgen's plan (``plan --emit``).

The capacity comes from the generated module's ``engine_capacity`` (never recomputed here),
and the settings are chosen so that the engine's own sizing code lands on it:

- vLLM 0.33.0 (``vllm.engine.arg_utils.EngineArgs``): ``num_gpu_blocks_override`` = the planned
  ``num_blocks`` fixes the block count whatever the profiler measures
  (``vllm/v1/core/kv_cache_planning.py``, ``may_override_num_blocks``), and
  ``kv_cache_memory_bytes`` = the planned budget makes the worker skip the
  ``gpu_memory_utilization`` profile (``vllm/v1/worker/gpu_worker.py``); vLLM divides it by its
  bytes per block to the same ``num_blocks``. ``max_model_len``, ``max_num_batched_tokens``,
  ``block_size``, ``kv_cache_dtype``, the parallel sizes and ``speculative_config`` are the
  inputs of the plan; ``hf_overrides`` keeps the config fields that transformers' class of the
  model_type would rewrite where the checkpoint is not served with --trust-remote-code
  (``kvgen._deploy.remote_code``: Ling 2.5 linear's head_dim).
- SGLang 0.5.23 (ServerArgs fields, ``sglang/srt/arg_groups/fields/``): ``max_total_tokens`` =
  the planned full-pool tokens caps the pool (``kv_cache_configurator._apply_token_constraints``
  takes the smaller of it and the profiled value) and ``mem_fraction_static`` leaves the room
  the budget arithmetic computed, so the profiled value is at least the plan when the hardware
  check fits; ``page_size``, ``context_length``, ``chunked_prefill_size``, the pool ratios, and
  on a recurrent hybrid ``mamba_radix_cache_strategy`` (its state slots per running request;
  ``no_buffer`` and ``extra_buffer_no_overlap`` with ``disable_overlap_schedule``,
  ``disabled`` as ``disable_radix_cache``; ``_sglang_mamba_flags``).
- TensorRT-LLM (``tensorrt_llm/llmapi/llm_args.py``): ``kv_cache_config.max_gpu_total_bytes`` =
  the budget in whole grains of the V2 manager, which keeps it as given (the manager takes the
  smaller of it and ``free_gpu_memory_fraction`` of the free memory), ``tokens_per_block`` the
  spec's page, ``use_kv_cache_manager_v2``, ``max_util_for_resume`` 0.95 as planned;
  ``max_batch_size``, ``max_num_tokens``, ``max_seq_len``, ``tensor_parallel_size``,
  ``pipeline_parallel_size``. The capacity (``engine_capacity``, as for every engine) is what
  the pools the engine's split of that quota builds hold (the early-2026 V2 revision), with
  the pages per pool group in ``capacity["engine_pools"]``.

``Launch.fields`` uses each engine's own field names, so a runner can pass them to the
engine's configuration classes unchanged (``EngineArgs(**fields)``, ``ServerArgs(**fields)``,
``TorchLlmArgs(**fields)``); ``Launch.args`` is the same as command-line flags.
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass, field
from typing import Any

from kvgen._deploy.remote_code import vllm_hf_overrides

__all__ = ["EMIT_ENGINES", "Launch", "launch", "render"]

# --emit name -> engine_capacity's engine name
EMIT_ENGINES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm-v2"}
CONFIG_CLASS = {
    "vllm": "vllm.engine.arg_utils.EngineArgs",
    "sglang": "sglang.srt.server_args.ServerArgs",
    "trtllm-v2": "tensorrt_llm.llmapi.llm_args.TorchLlmArgs",
}
# Where the settings go on the command line.
LAUNCHER = {
    "vllm": "vllm serve flags",
    "sglang": "python -m sglang.launch_server flags",
    "trtllm-v2": "trtllm-serve --extra_llm_api_options FILE.yaml",
}
# Spec dtype -> each engine's kv-cache dtype setting ("auto": the model's own dtype).
_KV_DTYPE = {
    # fp8_ds_mla: FlashMLA sparse (DeepSeek-V3.2), vLLM's CacheDType of that name; "auto"
    # would give a bf16 MLA cache (vllm/config/cache.py).
    # fp8/int8_per_token_head: vLLM's CacheDTypes of those names, the same bytes (one fp32
    # scale per token and head for K and for V; kvgen.engines_rows.VLLM_PER_TOKEN_HEAD).
    "vllm": {
        "fp8": "fp8_e4m3",
        "fp8_e5m2": "fp8_e5m2",
        "fp8_ds_mla": "fp8_ds_mla",
        "fp8_per_token_head": "fp8_per_token_head",
        "int8_per_token_head": "int8_per_token_head",
    },
    # SGLang has no fp8_ds_mla: its fp8_e4m3 DSA cache on Hopper (flashmla_kv) is the same
    # 656-byte layout (kv_cache_configurator.py calculate_mla_kv_cache_dim).
    "sglang": {"fp8": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "fp8_ds_mla": "fp8_e4m3"},
    "trtllm-v2": {"fp8": "fp8"},
}
# kvgen's profile mode -> vLLM's SpeculativeConfig.method (vllm/config/speculative.py)
_VLLM_METHOD = {
    "ngram": "ngram",
    "eagle3": "eagle3",
    "eagle3_two_model": "eagle3",
    "mtp": "mtp",
    "mtp_eagle": "mtp",
    "draft_target": "draft_model",
    "pard": "draft_model",  # with parallel_drafting (SpeculativeConfig: PARD)
}

# kvgen's profile mode -> SGLang's speculative_algorithm (sglang/srt/speculative/spec_info.py
# SpeculativeAlgorithm; "NEXTN" is its alias of EAGLE for a model's own MTP heads). Only the
# drafters kvgen's SGLang model plans: layers in the target's pool (EAGLE3, NEXTN, STANDALONE:
# a separate draft model) or none (NGRAM).
_SGLANG_ALGORITHM = {"eagle3": "EAGLE3", "mtp": "NEXTN", "mtp_eagle": "NEXTN",
                     "draft_target": "STANDALONE", "ngram": "NGRAM"}  # fmt: skip


@dataclass
class Launch:
    engine: str
    version: str
    config_class: str
    fields: dict[str, Any]
    capacity: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def args(self) -> list[list[str]]:
        """Each field as ``[--flag, value]`` in the engine's command-line spelling; a field set
        to true as ``[--flag]`` alone (SGLang's boolean fields are store_true flags, which take
        no value; no emitted field is false)."""
        out = []
        for name, value in self.fields.items():
            flag = f"--{name.replace('_', '-')}"
            if value is True:
                out.append([flag])
                continue
            if isinstance(value, dict):
                value = json.dumps(value, separators=(",", ":"), sort_keys=True)
            out.append([flag, str(value)])
        return out


def _kv_dtype(engine: str, dtype: str) -> str:
    return _KV_DTYPE[engine].get(dtype, "auto")


def _model_dtype(sizing: types.ModuleType, model: str) -> str:
    """The model's cache dtype: its attention rows' one dtype where they share it (a model's
    own kv_cache_dtype, as qwen3_235b_a22b_fp8_pth's), else the family's."""
    rows = sizing.ENGINE_MODELS[model].layers
    dtypes = {lay.dtype for lay in rows if lay.kv_heads and not lay.token_bytes}
    return dtypes.pop() if len(dtypes) == 1 else sizing.KV_CACHE_DTYPE


def _speculative(sizing: types.ModuleType, profile: str) -> dict[str, Any] | None:
    if profile == "none":
        return None
    spec = sizing.TABLES.profiles[profile]
    config: dict[str, Any] = {
        "method": _VLLM_METHOD.get(spec.mode, spec.mode),
        "num_speculative_tokens": spec.draft_len,
    }
    if spec.mode == "ngram":
        config["prompt_lookup_max"] = spec.draft_len
    if spec.mode == "pard":
        config["parallel_drafting"] = True
    return config


def _sglang_speculative(sizing: types.ModuleType, profile: str) -> dict[str, Any]:
    """ServerArgs' speculative settings (``sglang/srt/arg_groups/fields/``): the algorithm, a
    chain of ``draft_len`` steps (top-k 1) verifying ``draft_len + 1`` tokens. SGLang adds
    the drafter's layers to the pool's cell only when the algorithm is set (EAGLE/MTP)."""
    spec = sizing.TABLES.profiles[profile]
    fields = {
        "speculative_algorithm": _SGLANG_ALGORITHM[spec.mode],
        "speculative_num_steps": spec.draft_len,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": spec.draft_len + 1,
    }
    if spec.mode == "ngram":
        # A chain, as planned: _handle_ngram sets the top-k to this breadth (default 10).
        fields["speculative_ngram_max_bfs_breadth"] = 1
    return fields


def launch(
    sizing: types.ModuleType,
    model: str,
    *,
    engine: str,
    budget_bytes: int,
    max_seq_len: int,
    max_num_tokens: int,
    max_batch_size: int,
    block_size: int | None = None,
    speculative: str = "none",
    tp_size: int = 1,
    fraction: float | None = None,
    mamba_radix_cache_strategy: str | None = None,
    heterogeneous_vocab: bool = False,
) -> Launch:
    """The settings and the capacity they give; ``ValueError`` when the engine cannot serve one
    request of ``max_seq_len`` on ``budget_bytes`` (the engine would refuse to start).
    ``mamba_radix_cache_strategy``: SGLang's on a recurrent hybrid (None: what an H100/H200
    launch resolves, ``SGLANG_MAMBA_STRATEGY``). ``heterogeneous_vocab``: vLLM's
    speculative_config use_heterogeneous_vocab (a draft model of another vocabulary)."""
    if heterogeneous_vocab and engine != "vllm":
        raise ValueError(
            "--heterogeneous-vocab is vLLM's use_heterogeneous_vocab: emit it with --emit vllm"
        )
    common = {"max_seq_len": max_seq_len, "max_num_tokens": max_num_tokens,
              "speculative": speculative, "tp_size": tp_size}  # fmt: skip
    strategy = mamba_radix_cache_strategy or sizing.SGLANG_MAMBA_STRATEGY
    sglang = {"mamba_radix_cache_strategy": strategy} if engine == "sglang" else {}
    if heterogeneous_vocab:
        sglang = {"heterogeneous_vocab": True}
    cap = sizing.engine_capacity(
        model, budget_bytes, engine=engine, block_size=block_size,
        max_batch_size=max_batch_size, **common, **sglang,
    )  # fmt: skip
    capacity = {**cap._asdict(), "budget_bytes": budget_bytes}
    dtype = _kv_dtype(engine, _model_dtype(sizing, model))
    notes: list[str] = []
    if engine == "vllm":
        fields: dict[str, Any] = {
            "max_model_len": max_seq_len,
            "max_num_seqs": max_batch_size,
            "max_num_batched_tokens": max_num_tokens,
            "block_size": block_size or sizing.VLLM_BLOCK_SIZE,
            "kv_cache_memory_bytes": budget_bytes,
            "num_gpu_blocks_override": cap.num_blocks,
            "kv_cache_dtype": dtype,
            "tensor_parallel_size": tp_size,
            "pipeline_parallel_size": 1,
        }
        spec = _speculative(sizing, speculative)
        if spec is not None:
            fields["speculative_config"] = spec
            if "num_speculative_tokens" in spec and spec["method"] != "ngram":
                notes.append('speculative_config: add "model": the draft checkpoint\'s path')
            if heterogeneous_vocab:
                spec["use_heterogeneous_vocab"] = True
                notes.append(
                    "speculative_config use_heterogeneous_vocab: the draft's vocabulary differs "
                    "from the target's; vLLM maps tokens between them and supports greedy draft "
                    "sampling only (draft_sample_method greedy, no use_local_argmax_reduction), "
                    "on its V1 model runner"
                )
        kept = vllm_hf_overrides(sizing.ENGINE_MODELS[model].layers)
        if kept is not None:
            fields["hf_overrides"], note = kept
            notes.append(note)
    elif engine == "sglang":
        entry = sizing.ENGINE_MODELS[model]
        fields = {
            "context_length": max_seq_len,
            "max_running_requests": max_batch_size,
            "max_total_tokens": cap.kv_tokens,
            "page_size": block_size or sizing.SGLANG_PAGE_SIZE,
            "chunked_prefill_size": max_num_tokens,
            "kv_cache_dtype": dtype,
            "tp_size": tp_size,
        }
        if fraction is not None:
            fields["mem_fraction_static"] = fraction
        if speculative != "none":
            fields.update(_sglang_speculative(sizing, speculative))
            if sizing.TABLES.profiles[speculative].mode == "draft_target":
                notes.append("add speculative_draft_model_path: the draft model's path")
            if sizing.TABLES.profiles[speculative].mode == "eagle3":
                notes.append(
                    "add speculative_draft_model_path: the EAGLE3 draft's path; where the "
                    "draft's max_position_embeddings is below context_length, SGLang refuses "
                    "unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 is set"
                )
        if entry.hybrid_swa:
            fields["swa_full_tokens_ratio"] = sizing.SWA_FULL_TOKENS_RATIO
        if any(layer.attention == "recurrent" for layer in entry.layers):
            fields["mamba_full_memory_ratio"] = sizing.MAMBA_FULL_MEMORY_RATIO
            flags, note = _sglang_mamba_flags(strategy)
            fields.update(flags)
            if note:
                notes.append(note)
            ratio = sizing.SGLANG_MAMBA_SLOTS_PER_REQUEST[strategy]
            # What the state slots alone let run: the concurrency of 1-token requests.
            running = sizing.engine_capacity(
                model, budget_bytes, engine=engine, block_size=block_size,
                max_batch_size=max_batch_size, **{**common, "max_seq_len": 1}, **sglang,
            ).max_concurrency  # fmt: skip
            if running < max_batch_size:
                notes.append(
                    f"SGLang lowers max_running_requests to {int(running)}: one running "
                    f"request per {ratio} recurrent state slots under {strategy} "
                    "(kv_cache_configurator.py resolve_max_num_reqs)"
                )
    else:
        fields, capacity, notes = _trtllm(
            sizing, model, capacity, dtype, fraction, max_batch_size, common
        )
    version = sizing.ENGINE_VERSIONS[engine]
    return Launch(engine, version, CONFIG_CLASS[engine], fields, capacity, notes)


def _sglang_mamba_flags(strategy: str) -> tuple[dict[str, Any], str]:
    """The ServerArgs fields that make SGLang 0.5.23 resolve kvgen's Mamba radix cache
    ``strategy`` (arg_groups/overrides.py _mamba_radix_cache_resolution), and why a flag
    beyond the strategy is there ("" where none is). The strategy is spelled out so that a
    platform whose default resolves otherwise (no Mamba state snapshots) cannot change the
    state slots per running request."""
    if strategy == "disabled":
        # With the radix cache disabled resolution picks no strategy (and a given one is
        # never read: mamba_extra_buffer_of is False), so none is written.
        return {"disable_radix_cache": True}, (
            "disable_radix_cache: one recurrent state slot per max_running_requests "
            "(kv_cache_configurator.py _handle_max_mamba_cache), no prefix reuse"
        )
    if strategy in ("no_buffer", "extra_buffer_no_overlap"):
        # Resolution turns the overlap scheduler off only for a strategy it picks itself; a
        # given no_buffer with it on is refused (mamba_hook.py validate_mamba_no_buffer), and
        # extra_buffer keeps one tracking slot fewer without it (get_mamba_tracking_slots).
        given = strategy.removesuffix("_no_overlap")
        return {"mamba_radix_cache_strategy": given, "disable_overlap_schedule": True}, (
            "disable_overlap_schedule: SGLang runs the no_buffer Mamba radix cache only "
            "without the overlap scheduler (mamba_hook.py validate_mamba_no_buffer)"
            if given == "no_buffer"
            else "disable_overlap_schedule: SGLang's extra_buffer keeps 1 tracking slot per "
            "running request without the overlap scheduler, not 2 (allocation_sizing.py "
            "get_mamba_tracking_slots)"
        )
    return {"mamba_radix_cache_strategy": strategy}, ""


def _trtllm(
    sizing: types.ModuleType,
    model: str,
    capacity: dict[str, Any],
    dtype: str,
    fraction: float | None,
    max_batch_size: int,
    common: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """TensorRT-LLM V2's settings and what its pools hold for them (docs/deploy.md). The
    quota is the budget in whole grains of the engine (it rounds a quota up to its grain,
    ``kvgen.trtllm_split``), so the engine keeps exactly the emitted bytes; the capacity is
    ``engine_capacity``'s, what the pools the engine's split builds from that quota hold,
    and ``capacity["engine_pools"]`` those pools (``engine_plan_for_quota``)."""
    from kvgen._trtllm_pools import engine_budget_plan

    budget = capacity["budget_bytes"]
    notes: list[str] = []
    separate_draft = len(sizing.cache_costs(model, max_batch_size=max_batch_size, **common)) > 1
    if separate_draft:
        notes.append(
            "the separate draft pool's share of the quota is kvgen's split (docs/cost-model"
            ".md §6); how TensorRT-LLM divides one quota between its managers is not emitted"
        )
    try:
        _shares, quotas, plan = engine_budget_plan(
            sizing, model, budget, max_batch_size=max_batch_size, **common
        )
    except ValueError as exc:  # pools outside the split model: kvgen's own capacity
        quotas = {"target": budget}
        if separate_draft:
            quotas = sizing.split_budget(model, budget, max_batch_size=max_batch_size, **common)
        notes.append(f"capacity is kvgen's estimate for the quota: {exc}")
    else:
        capacity.update(
            quota_bytes=quotas,
            engine_pools={
                name: [
                    {"life_cycles": list(p.life_cycles), "slot_bytes": p.slot_bytes,
                     "planned_pages": p.planned_pages, "engine_pages": p.engine_pages}
                    for p in pools
                ]
                for name, (_t, pools) in plan.items()
            },
        )  # fmt: skip
    kv_cache_config: dict[str, Any] = {
        "max_gpu_total_bytes": sum(quotas.values()),
        "tokens_per_block": sizing.TOKENS_PER_BLOCK,
        "use_kv_cache_manager_v2": True,
        "max_util_for_resume": 0.95,
        "dtype": dtype,
    }
    if fraction is not None:
        kv_cache_config["free_gpu_memory_fraction"] = fraction
    fields = {
        "max_batch_size": max_batch_size,
        "max_num_tokens": common["max_num_tokens"],
        "max_seq_len": common["max_seq_len"],
        "tensor_parallel_size": common["tp_size"],
        "pipeline_parallel_size": 1,
        "kv_cache_config": kv_cache_config,
    }
    return fields, capacity, notes


def _yaml(value: Any, indent: int = 0) -> list[str]:
    """A YAML block for plain data: JSON scalars are YAML scalars (strings double-quoted)."""
    lines = []
    for key, item in value.items():
        if isinstance(item, dict):
            lines += [" " * indent + f"{key}:", *_yaml(item, indent + 2)]
        else:
            lines.append(" " * indent + f"{key}: {json.dumps(item)}")
    return lines


def render(launch: Launch, form: str) -> str:
    """``args`` (flags), ``yaml`` or ``json`` (fields, capacity, notes) of one launch."""
    if form == "json":
        data = {"engine": launch.engine, "version": launch.version,
                "config_class": launch.config_class, "fields": launch.fields,
                "capacity": launch.capacity, "notes": launch.notes}  # fmt: skip
        return json.dumps(data, indent=2) + "\n"
    if form == "yaml":
        return "\n".join(_yaml(launch.fields)) + "\n"
    pairs = ["  " + " ".join([arg[0], *map(_quoted, arg[1:])]) for arg in launch.args]
    return " \\\n".join(pairs) + "\n"


def _quoted(value: str) -> str:
    return f"'{value}'" if any(c in value for c in " {}\"'[],:") else value
