"""vLLM and SGLang capacities are modelled for plain cache dtypes only: a quantized layout
with scales (fp8_ds_mla, fp8 per token-head, ...) raises NotModelled naming the dtype in both
kvgen.engines and the generated modules' engine_capacity, instead of a wrong number; the same
family's plain-dtype models keep their engine numbers."""

from __future__ import annotations

import importlib

import pytest
from kvgen.engines import NotModelled, engine_capacity
from kvgen.loader import load_family

from tests.workloads import ROOT

GiB = 1 << 30
KW = {"max_seq_len": 8192, "max_num_tokens": 8192}
SCALED = [("deepseek_v3_2", "deepseek_v3_2_exp"), ("qwen3_moe", "qwen3_235b_a22b_fp8_pth")]


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


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_index_k_cache_is_not_modelled_even_at_a_plain_dtype(tmp_path, engine):
    """DeepSeek-V3.2 imported at its bf16 torch_dtype: the latent is plain, but the engine
    models have no index-K cache, so they refuse rather than leave its 132 B per layer out."""
    from kvgen.importhf import import_config

    config = ROOT / "tests" / "fixtures" / "hf" / "deepseek-v3.2-exp.json"
    result = import_config(config.name, config.read_text(encoding="utf-8"), tokens_per_block=64)
    assert result.text is not None and "kv_cache_dtype: bf16" in result.text
    path = tmp_path / "v32.yaml"
    path.write_text(result.text, encoding="utf-8")
    spec = load_family(path)
    with pytest.raises(NotModelled, match="index-K cache"):
        engine_capacity(spec, "deepseek_v3_2_exp", 80 * GiB, engine=engine, **KW)
