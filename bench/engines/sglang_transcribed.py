"""SGLang 0.5.23's KV pool sizing, TRANSCRIBED (not run): the engine's code could not run here.

Why transcribed, exactly: ``pip install --no-deps sglang==0.5.23`` into its own venv works, but
``import sglang.srt.model_executor.pool_configurator`` pulls ``sglang.srt.multimodal`` and with it
``torchvision``, and the PyPI torchvision 0.28.0 does not load against the machine's CPU torch
2.13.0 (``RuntimeError: operator torchvision::nms does not exist``). The configurators also read
process-wide server arguments (``get_schedule()``, ``get_memory()``) that only SGLang's server
sets up. So the formulas below are written out, step for step and in the engine's own order of
floating-point operations, from:

- ``sglang/srt/model_executor/pool_configurator.py``:
  ``DefaultPoolConfigurator._compute_cell_size`` and ``.calculate_pool_sizes`` (every attention
  layer sized full length; Gemma 2/3, Cohere2, Mistral, Phi-3 are not hybrid-SWA architectures:
  ``configs/model_config.py`` ``is_hybrid_swa_model``, and ``arg_groups/model_overrides/
  gemma2_gemma3.py`` disables hybrid SWA memory for Gemma 2/3),
  ``HybridSWAPoolConfigurator.__init__``, ``._recompute_cell_size``, ``.calculate_pool_sizes``
  and ``._solve_pool_sizes`` (gpt-oss: ``SWA_SINK_ARCHS``; ``swa_full_tokens_ratio`` fallback
  0.8 in ``arg_groups/fields/schedule.py``);
- ``sglang/srt/mem_cache/kv_cache_configurator.py``: ``_profile_available_bytes`` (the budget
  in GiB as a float, back to bytes with ``int(rest * (1 << 30))``) and
  ``_handle_max_mamba_cache`` (ratio branch: ``mamba_full_memory_ratio`` fallback 0.9);
- ``sglang/srt/configs/mamba_utils.py``: ``mamba2_state_dtype`` (SSM state fp32 by default, conv
  state bf16) and ``Mamba2CacheParams.mamba_cache_per_req``.

Input is the same case list the vLLM runner gets, plus each recurrent layer's conv/SSM split.
"""

from __future__ import annotations

from typing import Any

SGLANG_VERSION = "0.5.23"
HYBRID_SWA_FAMILIES = {"gpt_oss"}  # families whose architecture is in SWA_SINK_ARCHS
SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
GIB = 1 << 30


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    page_size = case["block_size"]
    kv_size = DTYPE_BYTES[case["dtype"]]
    attn = [lay for lay in case["layers"] if lay["type"] != "mamba"]
    mamba = [lay for lay in case["layers"] if lay["type"] == "mamba"]
    heads = {(lay.get("kv_heads", 1), lay["head_dim"]) for lay in attn}
    if len(heads) != 1:
        return {"error": "SGLang sizes every layer with one head count; not modelled"}
    ((n, head_dim),) = heads
    v_head_dim = 0 if attn[0]["type"] == "mla" else head_dim
    # _profile_available_bytes: rest_memory is in GiB (a float)
    rest_memory = case["budget_bytes"] / GIB
    out: dict[str, Any] = {}
    if mamba:
        # mamba_cache_per_req: conv in bf16, temporal (SSM) in fp32, times the Mamba layers
        conv_numel = mamba[0]["conv_elements"]
        ssm_numel = mamba[0]["ssm_elements"]
        per_req = (conv_numel * 2 + ssm_numel * 4) * len(mamba)
        # _handle_max_mamba_cache, ratio branch, no speculative decoding, no replay ring
        mamba_budget = rest_memory * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
        mamba_budget_bytes = mamba_budget * (1 << 30)
        per_slot = per_req + 0
        max_mamba_cache_size = int((mamba_budget_bytes - 0 - per_slot) // per_slot)
        mamba_state_memory = ((max_mamba_cache_size + 1) * (per_req + 0) + 0) / (1 << 30)
        rest_memory = rest_memory - mamba_state_memory
        out.update(mamba_cache_per_req=per_req, max_mamba_cache_size=max_mamba_cache_size)
    available_bytes = int(rest_memory * (1 << 30))
    sliding = [lay for lay in attn if lay["type"] == "sliding"]
    if case["family"] in HYBRID_SWA_FAMILIES and sliding:
        per_token = n * (head_dim + v_head_dim) * kv_size
        full_layers = len(attn) - len(sliding)
        full_cell = per_token * full_layers
        swa_cell = per_token * len(sliding)
        cell_size = full_cell + SWA_FULL_TOKENS_RATIO * swa_cell
        max_total_num_tokens = int(available_bytes // cell_size)
        full_tokens = (max_total_num_tokens // page_size) * page_size
        swa_tokens = (int(full_tokens * SWA_FULL_TOKENS_RATIO) // page_size) * page_size
        window = sliding[0]["window"]
        if window + page_size >= swa_tokens:
            return {"error": "SWA pool cannot hold even one request"}
        out.update(max_total_num_tokens=full_tokens, swa_max_total_num_tokens=swa_tokens)
        return out
    # DefaultPoolConfigurator: mamba hybrids count only their attention layers
    cell_size = n * (head_dim + v_head_dim) * len(attn) * kv_size
    max_total_num_tokens = available_bytes // cell_size
    max_total_num_tokens = max_total_num_tokens // page_size * page_size
    out.update(max_total_num_tokens=max_total_num_tokens)
    return out
