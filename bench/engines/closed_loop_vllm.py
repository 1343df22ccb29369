"""vLLM (the release installed) configured by kvgen's emitted settings: what its sizing computes.

Runs INSIDE vLLM's virtual environment (``refresh_goldens.py --closed-loop``), never in
kvgen's: it imports no kvgen module. Input (stdin): a JSON list of cases, each with the
``fields`` that ``kvgen plan ... --emit vllm --format json`` printed and the model's
``config.json``. Output: one JSON object per case with what vLLM computed.

What runs is vLLM's code, in the order ``vllm serve`` runs it:
1. ``EngineArgs(model=<dir holding only config.json>, skip_tokenizer_init=True, **fields)``
   and ``EngineArgs.create_engine_config``: the real ``VllmConfig`` (ModelConfig from the
   config.json, CacheConfig with ``block_size`` / ``num_gpu_blocks_override`` /
   ``kv_cache_memory_bytes`` / ``cache_dtype``, SchedulerConfig, ParallelConfig,
   SpeculativeConfig, the per-architecture config hooks, prefix caching and async scheduling
   defaults). An exception here is vLLM refusing the settings; its message is recorded.
2. the model's KV cache specs, built from that config through vLLM's own layer classes and
   methods as ``vllm_from_config.py`` does (its docstring lists what runs and what is stubbed),
   including the tp refusals of the attention class, and
   ``Platform.update_block_size_for_backend`` (the hybrid Mamba page alignment);
3. the worker's ``determine_available_memory`` with ``kv_cache_memory_bytes`` set: no profile,
   the budget minus ``reserve_mm_ipc_gpu_memory`` (``vllm/v1/worker/gpu_worker.py``);
4. the engine core's ``_initialize_kv_caches`` planner (``vllm_runner.plan``):
   ``get_global_kv_cache_groups`` -> ``get_kv_cache_configs`` (``num_gpu_blocks_override``
   applied as ``may_override_num_blocks`` does, the admission check against it) ->
   ``generate_scheduler_kv_cache_config`` -> ``get_kv_cache_capacity`` (the logged "GPU KV
   cache size" and "Maximum concurrency");
5. step 4 again with ``num_gpu_blocks_override`` removed: the blocks vLLM makes from
   ``kv_cache_memory_bytes`` alone (both settings must land on the same count).

Stubs, beyond those of ``vllm_runner.py`` / ``vllm_from_config.py``:
- the attention backend: ``vllm_runner.StubBackend``'s answers on a subclass of vLLM's
  ``AttentionBackend``, so that its ``supports_block_size`` is vLLM's.
- the platform: ``vllm.platforms.current_platform`` (UnspecifiedPlatform on a machine without
  CUDA, whose empty device type ``DeviceConfig`` refuses) is vLLM's own ``NonNvmlCudaPlatform``
  (so its ``check_and_update_config``, ``support_hybrid_kv_cache`` and the rest run) with the
  device queries answered as on an H100 node (capability 9.0, 81,559 MiB, 8 devices); the
  compiled-ops module it imports first (``vllm._C_stable_libtorch``, needs libcuda) is an empty
  module; ``vllm.config.vllm.HAS_TRITON`` is True, as on a GPU node (it picks the model runner);
  ``vllm._custom_ops.cutlass_scaled_mm_supports_fp8`` answers True, as on an H100 (FP8
  checkpoints' quantisation config asks it).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import types
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# vLLM logs to stdout; the results go there alone (see main).
RESULTS = sys.stdout
sys.stdout = sys.stderr

import vllm.platforms as platforms  # noqa: E402

# vLLM's CUDA platform module imports its compiled ops first; they need libcuda, and no
# configuration code uses them: an empty module stands in.
sys.modules.setdefault("vllm._C_stable_libtorch", types.ModuleType("vllm._C_stable_libtorch"))
from vllm.platforms.cuda import NonNvmlCudaPlatform  # noqa: E402
from vllm.platforms.interface import DeviceCapability, Platform  # noqa: E402


class H100Platform(NonNvmlCudaPlatform):
    """vLLM's own CUDA platform, answering the device queries as an H100 node would."""

    @classmethod
    def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
        return DeviceCapability(9, 0)

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        return "NVIDIA H100 80GB HBM3"

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        return 81559 << 20

    @classmethod
    def is_fully_connected(cls, physical_device_ids: list[int]) -> bool:
        return True

    @classmethod
    def device_count(cls) -> int:
        return 8


def install_platform() -> None:
    """Make the H100 platform current, also in every vLLM module that bound the machine's
    platform at import (``from vllm.platforms import current_platform``). Installed after the
    imports: with a CUDA platform at import time, vLLM would load its flash-attention
    extensions, which need a GPU."""
    machine = platforms.current_platform
    h100 = H100Platform()
    platforms._current_platform = h100  # type: ignore[attr-defined]
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm") and getattr(module, "current_platform", None) is machine:
            module.current_platform = h100  # type: ignore[attr-defined]


import vllm  # noqa: E402
import vllm._custom_ops  # noqa: E402
import vllm.engine.arg_utils  # noqa: E402
import vllm_from_config as from_config  # noqa: E402
import vllm_runner  # noqa: E402

install_platform()
# Triton is installed on a GPU node (vLLM picks its model runner by it); not on this machine.
vllm.config.vllm.HAS_TRITON = True  # type: ignore[attr-defined]
# The FP8 checkpoints' quantisation config asks the compiled ops whether CUTLASS FP8 kernels
# run on the device: on an H100 (SM 9.0) they do.
vllm._custom_ops.cutlass_scaled_mm_supports_fp8 = lambda capability: True  # type: ignore

from vllm.v1.attention.backend import AttentionBackend  # noqa: E402


class FlashAttentionH100(vllm_runner.StubBackend, AttentionBackend):  # type: ignore[misc]
    """``vllm_runner.StubBackend``'s answers (kernel blocks of any multiple of 16), with the
    rest of vLLM's ``AttentionBackend`` (``supports_block_size`` and the like) its own."""


PROVENANCE = {
    "engine_modules": [
        "vllm/engine/arg_utils.py (EngineArgs, create_engine_config)",
        "vllm/config/cache.py (CacheConfig)",
        "vllm/v1/worker/gpu_worker.py (determine_available_memory, kv_cache_memory_bytes)",
        "vllm/multimodal/gpu_ipc_memory.py (reserve_mm_ipc_gpu_memory)",
        "vllm/platforms/interface.py (update_block_size_for_backend)",
        "vllm/v1/core/kv_cache_planning.py (get_kv_cache_configs, may_override_num_blocks)",
        "vllm/v1/core/kv_cache_utils.py (get_kv_cache_capacity)",
    ],
    "functions": [
        "EngineArgs(**fields).create_engine_config",
        "Platform.update_block_size_for_backend",
        "reserve_mm_ipc_gpu_memory",
        "get_global_kv_cache_groups",
        "get_kv_cache_configs",
        "generate_scheduler_kv_cache_config",
        "get_kv_cache_capacity",
    ],
    "stubs": "bench/engines/closed_loop_vllm.py (platform), vllm_runner.py, vllm_from_config.py",
}


def config_dir(config_json: str) -> str:
    directory = Path(tempfile.mkdtemp(prefix="vllm_loop_"))
    (directory / "config.json").write_text(Path(config_json).read_text(encoding="utf-8"))
    return str(directory)


def _reason(exc: BaseException) -> str:
    """The engine's message, first line, the temporary model directory's name left out; a
    pydantic error on one field names the field (vLLM 0.34.0's "use_heterogeneous_vocab:
    Unexpected keyword argument")."""
    errors = exc.errors() if hasattr(exc, "errors") and callable(exc.errors) else []
    if len(errors) == 1 and errors[0].get("loc"):
        loc = ".".join(str(part) for part in errors[0]["loc"])
        return f"{type(exc).__name__}: {loc}: {errors[0]['msg']}"[:400]
    text = str(exc).split("[type=")[0].split(" Supported architectures")[0].strip()
    text = re.sub(r"\S*vllm_loop_\w+", "<model dir>", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:400]


def engine_config(case: dict[str, Any]) -> Any:
    """vLLM's VllmConfig from the emitted fields, as ``vllm serve`` builds it."""
    fields = json.loads(json.dumps(case["fields"]))
    spec = fields.get("speculative_config")
    if spec is not None and case.get("draft_hf_config"):
        spec["model"] = config_dir(case["draft_hf_config"])  # the note's draft checkpoint
    # vLLM's own refusal for an architecture its registry does not run (vllm_from_config).
    from_config.model_config(case["hf_config"])
    # The fields alone: a config field that transformers' class rewrites (Ling 2.5's head_dim)
    # comes back through the emitted hf_overrides, or vLLM sizes another state.
    args = vllm.engine.arg_utils.EngineArgs(
        model=config_dir(case["hf_config"]), skip_tokenizer_init=True, **fields
    )
    return args.create_engine_config()


def kv_cache_specs(config: Any, case: dict[str, Any]) -> dict[str, Any]:
    """Every layer's spec, as the model runner collects them (``vllm_from_config``)."""
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    model = config.model_config
    from_config.check_tp(config)
    layers: dict[str, Any] = {}
    if model.is_hybrid:
        layers = from_config.mamba_layers(config, "flashinfer")
        config.compilation_config.static_forward_context.update(layers)
    saved_find = Platform._find_non_ssm_backends
    Platform._find_non_ssm_backends = classmethod(  # type: ignore[method-assign]
        lambda cls, cfg: [FlashAttentionH100]
    )
    try:
        Platform.update_block_size_for_backend(config)
    finally:
        Platform._find_non_ssm_backends = saved_find  # type: ignore[method-assign]
    specs = dict(from_config.attention_specs(config, from_config.kv_dtype(config)))
    for name, layer in layers.items():
        specs[name] = layer.get_kv_cache_spec(config)
    speculative = config.speculative_config
    if speculative is not None and speculative.method == "draft_model":
        draft = SimpleNamespace(
            model_config=speculative.draft_model_config,
            parallel_config=config.parallel_config,
            cache_config=config.cache_config,
        )
        from_config.check_tp(draft)
        for name, spec in from_config.attention_specs(draft, from_config.kv_dtype(config)).items():
            specs[f"draft_model.{name}"] = replace(spec, is_draft=True)
    elif speculative is not None and speculative.method == "mtp":
        # An MTP module's decoder layer: one more full-attention layer of the target's shape
        # per module (the draft model config's num_nextn_predict_layers).
        hf = speculative.draft_model_config.hf_config
        first = next(s for n, s in specs.items() if n.endswith(".attn"))
        for index in range(getattr(hf, "num_nextn_predict_layers", 1) or 1):
            if model.use_mla:
                # DeepSeek's MTP layer is a decoder layer of the target's shape: its MLA
                # cache and, for V3.2, its indexer's key cache.
                for name, spec in list(specs.items()):
                    if name.startswith("model.layers.0."):
                        suffix = name.removeprefix("model.layers.0.")
                        specs[f"drafter.layers.{index}.{suffix}"] = replace(spec, is_draft=True)
            else:
                specs[f"drafter.layers.{index}.attn"] = FullAttentionSpec(
                    block_size=first.block_size, num_kv_heads=first.num_kv_heads,
                    head_size=first.head_size, dtype=first.dtype, is_draft=True,
                )  # fmt: skip
    return specs


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    from vllm.multimodal.gpu_ipc_memory import reserve_mm_ipc_gpu_memory
    from vllm.v1.attention.backends.utils import resolve_kv_cache_layout

    try:
        config = engine_config(case)
    except from_config.Refused as exc:
        return {"refused": _reason(exc).removeprefix("Refused: "), "refused_by": "ModelRegistry"}
    except Exception as exc:  # vLLM refuses the settings: its reason is the result
        return {"refused": _reason(exc), "refused_by": "EngineArgs.create_engine_config"}
    try:
        specs = kv_cache_specs(config, case)
    except from_config.Refused as exc:
        return {"refused": str(exc), "refused_by": "the model's attention class"}
    cache = config.cache_config
    # The engine core resolves the layout before planning; the stub backend declares none,
    # so vLLM's default preference (as in vllm_runner.py).
    resolve_kv_cache_layout(config, [["LBNHC"]], specs.values())
    available = reserve_mm_ipc_gpu_memory(
        cache.kv_cache_memory_bytes,
        config.model_config.multimodal_config,
        getattr(config.parallel_config, "_api_process_count", 1),
    )
    out = vllm_runner.plan(config, specs, {"budget_bytes": available})
    out["available_memory"] = available
    out["engine_settings"] = {
        "block_size": cache.block_size,
        "num_gpu_blocks_override": cache.num_gpu_blocks_override,
        "kv_cache_memory_bytes": cache.kv_cache_memory_bytes,
        "cache_dtype": cache.cache_dtype,
        "enable_prefix_caching": cache.enable_prefix_caching,
        "mamba_cache_mode": cache.mamba_cache_mode,
        "async_scheduling": config.scheduler_config.async_scheduling,
        "max_num_batched_tokens": config.scheduler_config.max_num_batched_tokens,
        "max_model_len": config.model_config.max_model_len,
        "tensor_parallel_size": config.parallel_config.tensor_parallel_size,
        "num_speculative_tokens": config.num_speculative_tokens,
    }
    if hasattr(cache, "enable_extensible_kv_cache"):
        # vLLM 0.34.0: the extensible KV cache (on by default on CUDA) as the settings resolve
        # it (kv_cache_memory_bytes or num_gpu_blocks_override turn it off), and the memory
        # fraction then in force.
        out["engine_settings"]["enable_extensible_kv_cache"] = cache.enable_extensible_kv_cache
        out["engine_settings"]["gpu_memory_utilization"] = cache.resolved_gpu_memory_utilization
    cache.num_gpu_blocks_override = None
    bytes_only = vllm_runner.plan(config, specs, {"budget_bytes": available})
    out["from_bytes_alone"] = {
        key: bytes_only.get(key) for key in ("num_blocks", "kv_tokens", "max_concurrency", "error")
    }
    return out


def main() -> int:
    cases = json.load(sys.stdin)
    out: dict[str, Any] = {"engine": "vllm", "version": vllm.__version__, "results": []}
    for case in cases:
        out["results"].append({"id": case["id"], **run_case(case)})
    out["provenance"] = PROVENANCE
    json.dump(out, RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
