"""The ling_linear family: Ling 2.5 linear, the first shipped linear-attention family.

Hand derivations (docs/cost-model.md §8), Ling 2.5 linear from transformers 5.24.0's
BailingHybridConfig defaults: 42 layers, every 6th MLA (7 MLA, 35 linear), 32 heads of 128.
One linear layer's state per request is one head_dim x head_dim matrix per head (vLLM
MambaStateShapeCalculator.linear_attention_state_shape: (heads/tp, head_dim, head_dim)):
  tp 1: 32 * 128 * 128 = 524288 elements, bf16: 1048576 B; tp 2: 16 heads, 524288 B.
No conv window. An MLA layer caches kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements
per token, bf16 1152 B, never split by tp: slope 7 * 1152 = 8064 B per token.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sizing_support import import_generated

REPO = Path(__file__).resolve().parents[2]
MODEL = "ling_2_5_linear"
LINEAR_LAYERS, MLA_LAYERS = 35, 7
STATE_TP1 = 32 * 128 * 128 * 2  # 1048576 B per layer per request
STATE_TP2 = 16 * 128 * 128 * 2  # 524288 B
SLOPE = MLA_LAYERS * (512 + 64) * 2  # 8064 B per token
RUN = {"max_batch_size": 5, "max_num_tokens": 256, "max_seq_len": 4096}


def generated(module: str):
    path = REPO / "generated" / "ling_linear" / f"{module}.py"
    if not path.exists():
        pytest.skip("run kvgen generate")
    return import_generated(path, f"_kvgen_ling_linear_{module}")


@pytest.mark.parametrize(("tp_size", "state"), [(1, STATE_TP1), (2, STATE_TP2)])
def test_state_per_request_is_one_matrix_per_head_split_by_tp(tp_size, state):
    terms = generated("sizing").cost_terms(MODEL, tp_size=tp_size, **RUN)["target"]
    assert terms["per_request"] == LINEAR_LAYERS * state
    assert terms["state_reserved_rows"] == LINEAR_LAYERS * state  # the CUDA-graph padding slot
    assert terms["slope"] == SLOPE


# vLLM 0.33.0 at L 8192, N 8192: the state page is the linear state in mamba_cache_dtype (the
# model dtype; linear_attention_state_dtype never reads mamba_ssm_cache_dtype), unified with
# the MLA page: block = 128 (MLA decode kernels in a hybrid) * ceil(state / (128 * 1152)).
# tp 1: 128 * ceil(1048576 / 147456) = 1024 tokens, page 1024 * 1152 = 1179648 B;
# tp 2: 128 * ceil(524288 / 147456) = 512 tokens, page 589824 B. Per request: 8192 tokens of
# MLA pages (7 layers) plus, prefix caching on (mamba_cache_mode "align", vLLM's default for
# hybrids), 2 state blocks per linear layer (no prefill checkpoint block: only MambaMixer2
# and GDN keep one); "none": 1.
#   tp 1 align: 8 * 7 * 1179648 + 35 * 2 * 1179648 = 148635648; none: 107347968
#   tp 2 align: 16 * 7 * 589824 + 35 * 2 * 589824 = 107347968
VLLM_LENGTHS = {"max_seq_len": 8192, "max_num_tokens": 8192}
VLLM = {"engine": "vllm", **VLLM_LENGTHS}


@pytest.mark.parametrize(
    ("tp_size", "mode", "request_bytes"),
    [(1, "align", 148635648), (1, "none", 107347968), (2, "align", 107347968)],
)
def test_vllm_state_page_joins_the_unified_page(tp_size, mode, request_bytes):
    sizing = generated("sizing")
    got = sizing.engine_capacity(MODEL, 40 << 30, tp_size=tp_size, mamba_cache_mode=mode, **VLLM)
    assert got.request_bytes == request_bytes
    fp32 = sizing.engine_capacity(
        MODEL, 40 << 30, tp_size=tp_size, mamba_cache_mode=mode, ssm_dtype="fp32", **VLLM
    )
    assert fp32 == got  # the linear state ignores the SSM dtype in vLLM


def test_sglang_keeps_the_state_in_its_ssm_dtype():
    # SGLang 0.5.23 BailingHybridConfig.mamba2_cache_params: Mamba2StateShape with no conv
    # channels (conv_kernel 1) and state (heads/tp, head_dim, head_dim) in mamba2_state_dtype,
    # fp32 by default: 35 * 32 * 128 * 128 * 4 = 73400320 B, plus 8192 tokens * 8064 B of MLA.
    sizing = generated("sizing")
    kw = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192}
    got = sizing.engine_capacity(MODEL, 40 << 30, **kw)
    assert got.request_bytes == 8192 * SLOPE + 35 * 32 * 128 * 128 * 4
    bf16 = sizing.engine_capacity(MODEL, 40 << 30, ssm_dtype="bf16", **kw)
    assert bf16.request_bytes == 8192 * SLOPE + LINEAR_LAYERS * STATE_TP1


def test_tensorrt_llm_row_is_not_modelled_naming_why():
    sizing = generated("sizing")
    with pytest.raises(sizing.NotModelled, match="kv_cache_manager_v2") as raised:
        sizing.engine_capacity(MODEL, 40 << 30, engine="trtllm-v2", **VLLM_LENGTHS)
    assert raised.value.reason == "trtllm_linear"
