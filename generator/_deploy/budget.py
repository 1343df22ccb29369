"""The KV budget per rank from the hardware: GPU memory, the engine's fraction, weights, reserve.

Each engine applies its memory fraction to a different quantity; kvgen shows each one's own
arithmetic (docs/deploy.md). What a release does is its ``Memory`` value in
``kvgen.sizing.engines_registry`` (the setting, its default and where it is read from, the quantity
it applies to, the default reserve):

- vLLM 0.33.0: ``total x gpu_memory_utilization - weights - non-KV peak``. The fraction is
  ``vllm.config.cache.CacheConfig.gpu_memory_utilization``, default **0.92** in 0.33.0 (the
  field's ``Field(default=0.92, gt=0, le=1)``), a share of the whole device, rounded up
  (``vllm/v1/worker/utils.py``, ``request_memory``); ``Worker.determine_available_memory``
  (``vllm/v1/worker/gpu_worker.py``) subtracts the weights, the peak of a profiling run and the
  CUDA graph estimate (``non_kv_cache_memory``, ``cudagraph_memory_estimate_applied``): all but
  the weights are the reserve.
- SGLang 0.5.23: ``total x mem_fraction_static - weights``. ``mem_fraction_static`` (ServerArgs,
  ``sglang/srt/arg_groups/fields/schedule.py``) is "model weights and KV cache memory pool" over
  the device memory, so activations and CUDA graphs already sit outside it; when unset SGLang
  computes it per GPU size and tp (``sglang/srt/arg_groups/memory_hook.py``,
  ``handle_gpu_memory_settings``), reproduced by ``sglang_default_fraction``.
- TensorRT-LLM: ``(total - weights - reserve) x free_gpu_memory_fraction``.
  ``tensorrt_llm/llmapi/llm_args.py`` ``KvCacheConfig.free_gpu_memory_fraction``, default
  **0.9**, is a share of the memory still free once the model is loaded and a profiling
  forward has run; ``max_gpu_total_bytes`` caps the result (the smaller one is used).

The reserve defaults are estimates, labelled so; pass ``--reserve`` for a measured figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    Memory,
    Release,
)

__all__ = ["Budget", "budget", "sglang_default_fraction"]

MiB = 1 << 20
GiB = 1 << 30


def sglang_default_fraction(
    total_bytes: int, *, tp_size: int, pp_size: int, chunked_prefill_size: int, max_running: int
) -> float:
    """``mem_fraction_static`` as SGLang 0.5.23 sets it when unset (memory_hook.py), for the
    settings kvgen emits (chunked prefill on, decode CUDA graphs on, no DP attention). Left out,
    and so an estimate: the prefill CUDA graph term, DeepEP/XPU headroom, the multimodal cut
    (adjust_mem_fraction_for_vlm) and post-capture sizing (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING,
    off by default)."""
    gpu_mib = total_bytes / MiB
    steps = ((20, 8, 8), (35, 48, 160), (60, 32, 160), (90, 256, 512), (160, 256, 512))
    max_bs = next((small if tp_size < 4 else large for gib, small, large in steps
                   if gpu_mib < gib * 1024), 512)  # fmt: skip
    max_bs = min(max_bs, max_running)  # decode max_bs follows max_running_requests below it
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + tp_size * pp_size / 8 * 1024
    reserved += max_bs * 2  # decode CUDA graphs (reserve_for_graph_mb)
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved) / gpu_mib, 3)


@dataclass(frozen=True)
class Budget:
    """One rank's KV budget and the arithmetic that gave it."""

    engine: str
    gpu: str
    gpu_source: str
    total_bytes: int
    fraction: float
    fraction_field: str
    fraction_source: str  # "given", or where the default comes from
    weights_bytes: int
    weights_source: str
    reserve_bytes: int
    reserve_source: str
    kv_bytes: int  # may be <= 0: then nothing fits
    memory: Memory  # the release's rule (not in the JSON report: kvgen._deploy.report)

    def formula(self) -> str:
        from kvgen._util.units import format_size as f

        total, weights, reserve = f(self.total_bytes), f(self.weights_bytes), f(self.reserve_bytes)
        if self.memory.of_free_memory:
            return (f"({total} - {weights} weights/rank - {reserve} reserve) x {self.fraction} "
                    f"{self.fraction_field} = {f(self.kv_bytes)} KV budget per rank")  # fmt: skip
        return (f"{total} x {self.fraction} {self.fraction_field} - {weights} weights/rank - "
                f"{reserve} reserve = {f(self.kv_bytes)} KV budget per rank")  # fmt: skip


def budget(
    engine: Release,
    *,
    gpu: str,
    gpu_source: str,
    total_bytes: int,
    weights_bytes: int,
    weights_source: str,
    fraction: float | None = None,
    reserve: int | None = None,
    tp_size: int = 1,
    pp_size: int = 1,
    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS,
    max_running: int = DEFAULT_MAX_BATCH_SIZE,
) -> Budget:
    """The KV budget per rank of the ``engine`` release on this hardware (``kv_bytes``, exact
    integers), by its ``Memory`` rule."""
    memory = engine.memory
    source = "given"
    if fraction is None:
        source = f"engine default, {memory.fraction_source}"
        fraction = memory.default_fraction
        if fraction is None:
            fraction = sglang_default_fraction(
                total_bytes, tp_size=tp_size, pp_size=pp_size,
                chunked_prefill_size=max_num_tokens, max_running=max_running,
            )  # fmt: skip
    reserve_source = "given"
    if reserve is None:
        reserve, reserve_source = memory.reserve, f"default, {memory.reserve_note}"
    kv = memory.kv_bytes(total_bytes, weights_bytes, reserve, fraction)
    return Budget(
        engine.engine.label, gpu, gpu_source, total_bytes, fraction, memory.fraction_field,
        source, weights_bytes, weights_source, reserve, reserve_source, kv, memory,
    )  # fmt: skip
