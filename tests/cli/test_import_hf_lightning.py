"""import-hf of lightning (linear) attention: MiniMax-Text-01 (transformers ``minimax``).

transformers 5.24.0's MiniMaxLightningAttention caches, per linear_attention layer, one
``head_dim x head_dim`` matrix per query head (MiniMaxCache.linear_cache: (batch,
num_attention_heads, head_dim, head_dim) in the model dtype), with ``head_dim`` =
``config.head_dim`` or ``hidden_size / num_attention_heads``; its full_attention layers a
DynamicLayer of num_key_value_heads K/V heads. The config below is the corpus entry's (the
MiniMaxConfig defaults cut to 4 layers): hidden_size 4096 / 32 heads = head_dim 128, so one
linear layer holds 32 * 128 * 128 = 524288 elements, 2097152 B in fp32 (the corpus measured
2097152 B per linear_cache entry), and a full layer 8 * 128 K + V elements per token.
"""

from __future__ import annotations

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._importhf import import_config
from kvgen._spec.loader import load_bytes
from kvgen.sizing.engines_core import NotModelled

from tests.cli.hf_corpus import load_corpus, verdict


def _entry(model_type: str) -> dict:
    return next(e for e in load_corpus()["entries"] if e["model_type"] == model_type)


def _minimax_family():
    result = import_config("config.json", _entry("minimax")["config"], kv_cache_dtype="fp32")
    assert [d.render() for d in result.diagnostics] == []
    assert result.text is not None
    loaded = load_bytes("minimax.yaml", result.text.encode())
    assert loaded.family is not None, loaded.diagnostics
    return loaded.family


def test_minimax_imports_lightning_layers_as_linear_states():
    family = _minimax_family()
    assert family.family == "minimax"
    model = family.models[0]
    pattern = model.layers.pattern
    kinds = [model.layer_kinds[pattern[i % len(pattern)]] for i in range(model.layers.count)]
    assert [k.attention for k in kinds] == ["full", "recurrent", "full", "recurrent"]
    linear = kinds[1].linear
    assert linear is not None and (linear.num_heads, linear.head_dim) == (32, 128)
    assert (kinds[0].kv_heads, kinds[0].head_dim) == (8, 128)
    # the lowered state transformers holds: 32 * 128 * 128 fp32 elements, no conv window
    dims = kinds[1].recurrent_dims
    assert dims is not None
    assert dims.num_heads * dims.head_dim * dims.d_state * 4 == 2097152
    assert dims.d_conv - 1 == 0


def test_minimax_matches_the_cache_transformers_allocated():
    found = verdict(_entry("minimax"))
    assert found.verdict == "match", found


def test_engines_that_cannot_run_minimax_say_why():
    family = _minimax_family()
    name = family.models[0].name
    kw = {"max_seq_len": 4096, "max_num_tokens": 4096}
    for version in ("0.33.0", "0.34.0"):  # each release names itself (0.34.0: plain vllm)
        with pytest.raises(
            NotModelled, match=rf"vLLM {version} cannot run MiniMax.*until vLLM 0\.23\.0"
        ):
            engine_capacity(family, name, 1 << 36, engine=f"vllm=={version}", **kw)
    with pytest.raises(NotModelled, match=r"vLLM 0\.34\.0 cannot run MiniMax"):
        engine_capacity(family, name, 1 << 36, engine="vllm", **kw)
    with pytest.raises(NotModelled, match=r"SGLang 0\.5\.23 cannot run MiniMax"):
        engine_capacity(family, name, 1 << 36, engine="sglang", **kw)
    with pytest.raises(NotModelled, match="kv_cache_manager_v2") as raised:
        engine_capacity(family, name, 1 << 36, engine="trtllm-v2", **kw)
    assert raised.value.reason == "trtllm_linear"


def test_a_ling_2_5_lightning_config_imports_as_the_shipped_family():
    # tests/fixtures/hf/ling-2.5-linear.json: BailingMoeV2_5ForCausalLM, no short conv (the
    # checkpoint's config class reads that as lightning, not KDA), layer_group_size 6: layers
    # 5, 11, ... MLA (vLLM is_linear_layer), 32 heads of head_dim 128.
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "tests" / "fixtures" / "hf" / "ling-2.5-linear.json").read_text()
    result = import_config("ling-2.5-linear.json", text, family="ling_linear")
    assert [d.render() for d in result.diagnostics] == []
    imported = load_bytes("imported.yaml", result.text.encode()).family.models[0]
    shipped = load_bytes(
        "ling_linear.yaml", (root / "schema" / "families" / "ling_linear.yaml").read_bytes()
    ).family.models[0]
    assert imported.layers.count == shipped.layers.count == 42
    for index in range(42):
        ours = imported.layer_kinds[imported.layers.pattern[index % 6]]
        theirs = shipped.layer_kinds[shipped.layers.pattern[index % 6]]
        assert (ours.linear, ours.kv_lora_rank, ours.qk_rope_head_dim) == (
            theirs.linear,
            theirs.kv_lora_rank,
            theirs.qk_rope_head_dim,
        ), index
    assert imported.layer_kinds["lightning"].linear.num_heads == 32
