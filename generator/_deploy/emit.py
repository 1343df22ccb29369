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
import shlex
import types
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kvgen._deploy.remote_code import vllm_hf_overrides
from kvgen._engines.dtype import model_dtype as _model_dtype
from kvgen.sizing.engines_registry import Release, Settings

__all__ = ["Launch", "launch", "render"]

# Each engine's vocabulary (its config class, launcher, kv-cache dtype names, speculative
# methods) is its ``Settings`` in kvgen.sizing.engines_registry; its fields for a plan are built by
# its ``Hooks.launch`` function here (``_vllm_launch``, ``_sglang_launch``, ``_trtllm_launch``).


@dataclass
class Launch:
    engine: str
    version: str
    config_class: str
    fields: dict[str, Any]
    capacity: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    release: str = ""  # the engine release the settings are for (Release.described)

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
                value = json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)
            out.append([flag, str(value)])
        return out


def _speculative(
    sizing: types.ModuleType, profile: str, settings: Settings
) -> dict[str, Any] | None:
    if profile == "none":
        return None
    spec = sizing.TABLES.profiles[profile]
    config: dict[str, Any] = {
        "method": dict(settings.speculative_methods).get(spec.mode, spec.mode),
        "num_speculative_tokens": spec.draft_len,
    }
    if spec.mode == "ngram":
        config["prompt_lookup_max"] = spec.draft_len
    if spec.mode == "pard":
        config["parallel_drafting"] = True
    return config


def _sglang_speculative(
    sizing: types.ModuleType, profile: str, settings: Settings
) -> dict[str, Any]:
    """ServerArgs' speculative settings (``sglang/srt/arg_groups/fields/``): the algorithm, a
    chain of ``draft_len`` steps (top-k 1) verifying ``draft_len + 1`` tokens. SGLang adds
    the drafter's layers to the pool's cell only when the algorithm is set (EAGLE/MTP)."""
    spec = sizing.TABLES.profiles[profile]
    fields = {
        "speculative_algorithm": dict(settings.speculative_methods)[spec.mode],
        "speculative_num_steps": spec.draft_len,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": spec.draft_len + 1,
    }
    if spec.mode == "ngram":
        # A chain, as planned: _handle_ngram sets the top-k to this breadth (default 10).
        fields["speculative_ngram_max_bfs_breadth"] = 1
    return fields


class LaunchAsked(NamedTuple):
    """What ``launch`` was asked, as each engine's launch hook reads it."""

    model: str
    budget_bytes: int
    max_batch_size: int
    block_size: int | None
    fraction: float | None
    strategy: str  # SGLang's Mamba radix cache strategy on a recurrent hybrid
    heterogeneous_vocab: bool
    common: dict[str, Any]  # max_seq_len, max_num_tokens, speculative, tp_size


def launch(
    sizing: types.ModuleType,
    model: str,
    *,
    engine: Release,
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
    speculative_config use_heterogeneous_vocab (a draft model of another vocabulary).
    ``engine``'s release says which revision the settings are for (TensorRT-LLM: trtllm or
    trtllm==early-2026, trtllm==38198e34)."""
    if heterogeneous_vocab and "heterogeneous_vocab" not in engine.engine.reads:
        raise ValueError(
            "--heterogeneous-vocab is vLLM's use_heterogeneous_vocab: emit it with --emit vllm"
        )
    common = {"max_seq_len": max_seq_len, "max_num_tokens": max_num_tokens,
              "speculative": speculative, "tp_size": tp_size}  # fmt: skip
    strategy = mamba_radix_cache_strategy or sizing.SGLANG_MAMBA_STRATEGY
    asked = LaunchAsked(model, budget_bytes, max_batch_size, block_size, fraction, strategy,
                  heterogeneous_vocab, common)  # fmt: skip
    cap = sizing.engine_capacity(
        model, budget_bytes, engine=engine.argument, block_size=block_size,
        max_batch_size=max_batch_size, **common, **_own_keywords(engine, asked),
    )  # fmt: skip
    capacity = {**cap._asdict(), "budget_bytes": budget_bytes}
    hook = globals()[engine.engine.hooks.launch]
    fields, capacity, notes = hook(engine, sizing, asked, cap, capacity)
    notes.extend(engine.launch_notes)  # what this release's settings change beyond the budget
    settings = engine.engine.settings
    return Launch(
        engine.engine.label, engine.shown, settings.config_class, fields, capacity, notes,
        engine.described,
    )  # fmt: skip


def _own_keywords(engine: Release, asked: LaunchAsked) -> dict[str, Any]:
    """The ``engine_capacity`` keywords only some engines read, for this engine: SGLang's
    Mamba radix cache strategy, vLLM's use_heterogeneous_vocab where asked."""
    own: dict[str, Any] = {"mamba_radix_cache_strategy": asked.strategy}
    if asked.heterogeneous_vocab:
        own = {"heterogeneous_vocab": True}
    return {key: value for key, value in own.items() if key in engine.engine.reads}


def _vllm_launch(
    engine: Release,
    sizing: types.ModuleType,
    asked: LaunchAsked,
    cap: Any,
    capacity: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """vLLM's EngineArgs fields for the plan (the module docstring says why each is set)."""
    settings = engine.engine.settings
    notes: list[str] = []
    fields: dict[str, Any] = {
        "max_model_len": asked.common["max_seq_len"],
        "max_num_seqs": asked.max_batch_size,
        "max_num_batched_tokens": asked.common["max_num_tokens"],
        "block_size": asked.block_size or engine.block_size,
        "kv_cache_memory_bytes": asked.budget_bytes,
        "num_gpu_blocks_override": cap.num_blocks,
        "kv_cache_dtype": settings.kv_cache_dtype(_model_dtype(sizing, asked.model)),
        "tensor_parallel_size": asked.common["tp_size"],
        "pipeline_parallel_size": 1,
    }
    spec = _speculative(sizing, asked.common["speculative"], settings)
    if spec is not None:
        fields["speculative_config"] = spec
        if "num_speculative_tokens" in spec and spec["method"] != "ngram":
            notes.append('speculative_config: add "model": the draft checkpoint\'s path')
        if asked.heterogeneous_vocab:
            spec["use_heterogeneous_vocab"] = True
            notes.append(
                "speculative_config use_heterogeneous_vocab: the draft's vocabulary differs "
                "from the target's; vLLM maps tokens between them and supports greedy draft "
                "sampling only (draft_sample_method greedy, no use_local_argmax_reduction), "
                "on its V1 model runner"
            )
    kept = vllm_hf_overrides(sizing.ENGINE_MODELS[asked.model].layers)
    if kept is not None:
        fields["hf_overrides"], note = kept
        notes.append(note)
    return fields, capacity, notes


def _sglang_launch(
    engine: Release,
    sizing: types.ModuleType,
    asked: LaunchAsked,
    cap: Any,
    capacity: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """SGLang's ServerArgs fields for the plan (the module docstring says why each is set)."""
    settings = engine.engine.settings
    model, speculative, strategy = asked.model, asked.common["speculative"], asked.strategy
    notes: list[str] = []
    entry = sizing.ENGINE_MODELS[model]
    fields: dict[str, Any] = {
        "context_length": asked.common["max_seq_len"],
        "max_running_requests": asked.max_batch_size,
        "max_total_tokens": cap.kv_tokens,
        "page_size": asked.block_size or engine.block_size,
        "chunked_prefill_size": asked.common["max_num_tokens"],
        "kv_cache_dtype": settings.kv_cache_dtype(_model_dtype(sizing, model)),
        "tp_size": asked.common["tp_size"],
    }
    if asked.fraction is not None:
        fields[engine.memory.fraction_field] = asked.fraction
    if speculative != "none":
        fields.update(_sglang_speculative(sizing, speculative, settings))
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
            model, asked.budget_bytes, engine=engine.argument, block_size=asked.block_size,
            max_batch_size=asked.max_batch_size, **{**asked.common, "max_seq_len": 1},
            **_own_keywords(engine, asked),
        ).max_concurrency  # fmt: skip
        if running < asked.max_batch_size:
            notes.append(
                f"SGLang lowers max_running_requests to {int(running)}: one running "
                f"request per {ratio} recurrent state slots under {strategy} "
                "(kv_cache_configurator.py resolve_max_num_reqs)"
            )
    return fields, capacity, notes


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


def _trtllm_launch(
    engine: Release,
    sizing: types.ModuleType,
    asked: LaunchAsked,
    cap: Any,
    capacity: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """TensorRT-LLM V2's settings and what its pools hold for them at the release ``engine``
    (docs/deploy.md; ``kvgen.sizing._trtllm_pools.trtllm_emit``): the quota in whole grains of the
    engine, at a release that splits per request (38198e34) the ``pool_ratio`` that makes its
    split build kvgen's pools; the capacity is what the pools the engine builds hold,
    ``capacity["engine_pools"]`` those pools."""
    from kvgen.sizing._trtllm_pools import trtllm_emit

    model, max_batch_size, common = asked.model, asked.max_batch_size, asked.common
    dtype = engine.engine.settings.kv_cache_dtype(_model_dtype(sizing, model))
    budget = capacity["budget_bytes"]
    notes: list[str] = []
    if engine.per_request_split:
        notes.append(f"for {engine.named}: the capacity is what its own split of the quota "
                     "builds (docs/cost-model.md §11)")  # fmt: skip
    separate_draft = len(sizing.cache_costs(model, max_batch_size=max_batch_size, **common)) > 1
    if separate_draft and not engine.per_request_split:
        notes.append(
            "the separate draft pool's share of the quota is kvgen's split (docs/cost-model"
            ".md §6); how TensorRT-LLM divides one quota between its managers is not emitted"
        )
    ratio = None
    try:
        plan = trtllm_emit(sizing, model, budget, max_batch_size=max_batch_size,
                           revision=engine.version, **common)  # fmt: skip
    except ValueError as exc:  # pools outside the split model: kvgen's own capacity
        quotas = {"target": budget}
        if separate_draft:
            quotas = sizing.split_budget(model, budget, max_batch_size=max_batch_size, **common)
        quota = sum(quotas.values())
        notes.append(f"capacity is kvgen's estimate for the quota: {exc}")
    else:
        quota, quotas, ratio = plan.quota, plan.quotas, plan.pool_ratio
        notes += plan.notes
        capacity.update(
            quota_bytes=quotas,
            engine_pools={
                name: [
                    {"life_cycles": list(p.life_cycles), "slot_bytes": p.slot_bytes,
                     "planned_pages": p.planned_pages, "engine_pages": p.engine_pages}
                    for p in pools
                ]
                for name, pools in plan.pools.items()
            },
        )  # fmt: skip
        if engine.per_request_split:  # what that revision's own split builds
            seq, tpb = common["max_seq_len"], sizing.TOKENS_PER_BLOCK
            tokens = max_batch_size * seq if plan.tokens is None else plan.tokens
            capacity.update(kv_tokens=tokens, num_blocks=tokens // tpb,
                            max_concurrency=min(tokens / seq, float(max_batch_size)))  # fmt: skip
    kv_cache_config: dict[str, Any] = {
        "max_gpu_total_bytes": quota,
        "tokens_per_block": sizing.TOKENS_PER_BLOCK,
        "use_kv_cache_manager_v2": True,
        "max_util_for_resume": 0.95,
        "dtype": dtype,
    }
    if ratio is not None:
        kv_cache_config["pool_ratio"] = ratio
    if asked.fraction is not None:
        kv_cache_config[engine.memory.fraction_field] = asked.fraction
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
            lines.append(" " * indent + f"{key}: {json.dumps(item, allow_nan=False)}")
    return lines


def render(launch: Launch, form: str, *, named: bool = True) -> str:
    """``args`` (flags), ``yaml`` or ``json`` (fields, capacity, notes) of one launch. Each
    names the engine release the settings are for: JSON in ``release``, YAML in a first
    comment line (``named`` False: not, where a report names it above)."""
    if form == "json":
        data = {"engine": launch.engine, "version": launch.version,
                "release": launch.release, "config_class": launch.config_class,
                "fields": launch.fields, "capacity": launch.capacity,
                "notes": launch.notes}  # fmt: skip
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    if form == "yaml":
        head = [f"# for {launch.release}"] if named and launch.release else []
        return "\n".join(head + _yaml(launch.fields)) + "\n"
    # shlex.quote: a POSIX shell reads each value back as it is, whatever it holds (quotes,
    # $(...), backticks, ;, a newline); names and numbers stay unquoted.
    pairs = ["  " + " ".join([arg[0], *map(shlex.quote, arg[1:])]) for arg in launch.args]
    return " \\\n".join(pairs) + "\n"
