"""vLLM and SGLang capacities are modelled for plain cache dtypes (and, in vLLM, FlashMLA's
fp8_ds_mla row on MLA, and the per-token-head layouts on full attention, which vLLM 0.33.0
stores in the same bytes as kvgen); another quantized layout with scales raises NotModelled
naming the dtype in both kvgen._engines.capacity and the generated modules' engine_capacity, instead
of a wrong number, and SGLang, which has no per-token-head cache, refuses it naming its choices.

Hand derivation for qwen3_235b_a22b_fp8_pth (schema/families/qwen3_moe.yaml: 94 full layers,
4 KV heads of 128, fp8 K/V plus an fp32 scale per (token, head) for K and for V), in vLLM
0.33.0's terms (docs/cost-model.md §9), provenance tests/fixtures/engines/vllm.json
(qwen3_235b_a22b_fp8_pth from tests/fixtures/hf/qwen3-235b-a22b.json with kv_cache_dtype
fp8_per_token_head through vLLM's TritonAttentionBackend.customize_spec: state_content_bytes
264, bytes_per_block 1,588,224 at block 16, tp 1):
- one head of one token: (128 + 128) x 1 B + 2 x 4 B = 264 B (vLLM's state_content_bytes);
- one block of 16 tokens, every layer: 94 x 16 x 4 x 264 = 1,588,224 B;
- 80 GiB = 85,899,345,920 B // 1,588,224 = 54,085 blocks (54,085.6);
- max_seq_len 8192: 8,192 / 16 = 512 blocks a request, 512 x 1,588,224 = 813,170,688 B;
  concurrency 54,085 / 512 = 105.634765625; tokens int(105.634765625 x 8,192) = 865,360.
"""

from __future__ import annotations

import importlib

import pytest
from kvgen._engines.capacity import NotModelled, engine_capacity
from kvgen._spec.loader import load_bytes, load_family

from tests.workloads import ROOT

GiB = 1 << 30
KW = {"max_seq_len": 8192, "max_num_tokens": 8192}
SPEC = ROOT / "schema" / "families" / "qwen3_moe.yaml"
MODEL = "qwen3_235b_a22b_fp8_pth"
# (kv_tokens, max_concurrency, request_bytes, num_blocks) by the derivation above.
VLLM_80GIB = (865_360, 105.634765625, 813_170_688, 54_085)


def _spec(dtype: str = "fp8_per_token_head"):
    text = SPEC.read_text(encoding="utf-8")
    assert "kv_cache_dtype: fp8_per_token_head" in text
    text = text.replace("kv_cache_dtype: fp8_per_token_head", f"kv_cache_dtype: {dtype}")
    family = load_bytes(SPEC.name, text.encode()).family
    assert family is not None
    return family


@pytest.mark.parametrize("dtype", ["fp8_per_token_head", "int8_per_token_head"])
def test_vllm_answers_the_per_token_head_layouts(dtype):
    # vLLM's int8_per_token_head is the same bytes (int8 elements, the same fp32 scales).
    got = engine_capacity(_spec(dtype), MODEL, 80 * GiB, engine="vllm==0.33.0", **KW)
    assert tuple(got) == VLLM_80GIB
    sizing = importlib.import_module("generated.qwen3_moe.sizing")
    assert tuple(sizing.engine_capacity(MODEL, 80 * GiB, engine="vllm==0.33.0", **KW)) == VLLM_80GIB


def test_sglang_refuses_per_token_head_naming_its_dtype_choices():
    # The starting commit said "its kv_cache_dtype is not modelled per engine" for SGLang too.
    with pytest.raises(NotModelled, match=r"SGLang 0\.5\.23 has no per-token-head") as info:
        engine_capacity(load_family(SPEC), MODEL, 80 * GiB, engine="sglang", **KW)
    assert info.value.reason == "sglang_no_per_token_head"
    assert "fp8_e4m3, mxfp8" in str(info.value)
    sizing = importlib.import_module("generated.qwen3_moe.sizing")
    with pytest.raises(sizing.NotModelled, match=r"kv_cache_dtype\.py"):
        sizing.engine_capacity(MODEL, 80 * GiB, engine="sglang", **KW)


def test_a_layout_no_engine_stores_is_still_not_modelled():
    # mxfp8 (an e8m0 scale per 32 elements): vLLM 0.33.0 has no kv_cache_dtype of that layout.
    for engine in ("vllm", "sglang"):
        with pytest.raises(NotModelled, match="kv_cache_dtype is not modelled") as info:
            engine_capacity(_spec("mxfp8"), MODEL, 80 * GiB, engine=engine, **KW)
        assert info.value.reason == "dtype"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_plain_models_of_the_family_are_still_modelled(engine):
    sizing = importlib.import_module("generated.qwen3_moe.sizing")
    capacity = sizing.engine_capacity("qwen3_235b_a22b", 80 * GiB, engine=engine, **KW)
    # 94 layers x 2 x 4 heads x 128 x 2 B = 192,512 B per token: 80 GiB holds at most
    # 85,899,345,920 / 192,512 = 446,202 tokens, whatever the engine's page rounding.
    assert 0 < capacity.kv_tokens <= 80 * GiB // 192_512


def test_index_k_cache_at_a_plain_dtype_both_engines_count_it(tmp_path):
    """DeepSeek-V3.2 imported at its bf16 torch_dtype: the latent is plain (576 x 2 B =
    1,152 B) and the indexer key keeps its 132 B per layer in vLLM (DeepseekV32IndexerCache)
    and in SGLang (DSATokenToKVPool's index_k buffers, fp8 whatever the cache dtype)."""
    from kvgen._importhf import import_config

    config = ROOT / "tests" / "fixtures" / "hf" / "deepseek-v3.2-exp.json"
    result = import_config(config.name, config.read_text(encoding="utf-8"), tokens_per_block=64)
    assert result.text is not None and "kv_cache_dtype: bf16" in result.text
    path = tmp_path / "v32.yaml"
    path.write_text(result.text, encoding="utf-8")
    spec = load_family(path)
    # vLLM, block 16: 16 x 61 x (1,152 + 132) = 1,253,184 B a block, 80 GiB // that = 68,544
    # blocks (68,544.9); a request at 8,192 takes 512: 68,544 / 512 x 8,192 = 1,096,704 tokens.
    vllm = engine_capacity(spec, "deepseek_v3_2_exp", 80 * GiB, engine="vllm==0.33.0", **KW)
    assert (vllm.num_blocks, vllm.kv_tokens) == (68_544, 1_096_704)
    # SGLang, page 1: 61 x 1,284 = 78,324 B a token, 80 GiB / that = 1,096,718.6 tokens.
    # (SGLang's own pools at 40 GiB, bf16, from config.json: 548,359 = 40 GiB // 78,324;
    # tests/fixtures/engines/closed_loop_sglang.json.)
    sglang = engine_capacity(spec, "deepseek_v3_2_exp", 80 * GiB, engine="sglang", **KW)
    assert sglang.kv_tokens == 80 * GiB // 78_324 == 1_096_718


def test_per_token_head_on_a_sliding_window_is_still_not_modelled():
    # vLLM's sliding layers pick their own block size from the packed page (attention.py
    # _largest_kernel_block_within); no golden holds a sliding per-token-head case, so kvgen
    # keeps refusing it rather than guess (Gemma 2: sliding and full layers).
    path = ROOT / "schema" / "families" / "gemma2.yaml"
    text = path.read_text(encoding="utf-8").replace(
        "kv_cache_dtype: bf16", "kv_cache_dtype: fp8_per_token_head", 1
    )
    family = load_bytes(path.name, text.encode()).family
    assert family is not None
    with pytest.raises(NotModelled, match="on full attention in vLLM") as info:
        engine_capacity(family, "gemma2_9b", 80 * GiB, engine="vllm==0.33.0", **KW)
    assert info.value.reason == "dtype"
