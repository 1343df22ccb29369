"""vLLM and SGLang capacities are modelled for plain cache dtypes (and, in vLLM, FlashMLA's
fp8_ds_mla row on MLA): another quantized layout with scales (fp8 per token-head, ...) raises
NotModelled naming the dtype in both kvgen._engines and the generated modules' engine_capacity,
instead of a wrong number; the same family's plain-dtype models keep their engine numbers."""

from __future__ import annotations

import importlib

import pytest
from kvgen._engines import NotModelled, engine_capacity
from kvgen._loader import load_family

from tests.workloads import ROOT

GiB = 1 << 30
KW = {"max_seq_len": 8192, "max_num_tokens": 8192}
SCALED = [("qwen3_moe", "qwen3_235b_a22b_fp8_pth")]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize(("family", "model"), SCALED)
def test_scaled_layouts_are_not_modelled_per_engine(engine, family, model):
    spec = load_family(ROOT / "schema" / "families" / f"{family}.yaml")
    with pytest.raises(NotModelled, match="kv_cache_dtype is not modelled"):
        engine_capacity(spec, model, 80 * GiB, engine=engine, **KW)
    sizing = importlib.import_module(f"generated.{family}.sizing")
    with pytest.raises(sizing.NotModelled, match="kv_cache_dtype is not modelled"):
        sizing.engine_capacity(model, 80 * GiB, engine=engine, **KW)


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
    vllm = engine_capacity(spec, "deepseek_v3_2_exp", 80 * GiB, engine="vllm", **KW)
    assert (vllm.num_blocks, vllm.kv_tokens) == (68_544, 1_096_704)
    # SGLang, page 1: 61 x 1,284 = 78,324 B a token, 80 GiB / that = 1,096,718.6 tokens.
    # (SGLang's own pools at 40 GiB, bf16, from config.json: 548,359 = 40 GiB // 78,324;
    # tests/fixtures/engines/closed_loop_sglang.json.)
    sglang = engine_capacity(spec, "deepseek_v3_2_exp", 80 * GiB, engine="sglang", **KW)
    assert sglang.kv_tokens == 80 * GiB // 78_324 == 1_096_718
