"""import-hf reads configs the way transformers' config classes read them (issue 22).

Each config below is the saved form (``to_json_string(use_diff=True)``) of the named
transformers 5.24.0 config class's defaults, cut to the fields that matter; the expected
shapes are derived by hand from the class's modelling code, named next to each test, and the
cache tensors transformers allocated for them are in the corpus fixture
(tests/fixtures/hf/corpus, tests/cli/test_import_hf_corpus.py)."""

from __future__ import annotations

import json

from kvgen._generate.sizing_context import bound_module
from kvgen._importhf import import_config
from kvgen._spec.loader import load_bytes
from kvgen._spec.models import Family

from tests.generated.test_families import layer_kinds


def _import(config: dict, **options) -> tuple[str | None, list[str], list[str]]:
    result = import_config("config.json", json.dumps(config, indent=2), **options)
    return (
        result.text,
        [d.render() for d in result.diagnostics],
        [d.render() for d in result.notes],
    )


def _family(config: dict, **options) -> Family:
    text, diagnostics, _ = _import(config, **options)
    assert diagnostics == []
    assert text is not None
    loaded = load_bytes("imported.yaml", text.encode())
    assert loaded.family is not None, loaded.diagnostics
    return loaded.family


def _position(config: dict, key: str) -> str:
    """config.json:LINE:COL of a top-level key in json.dumps(config, indent=2)."""
    for number, line in enumerate(json.dumps(config, indent=2).splitlines(), start=1):
        if line.startswith(f'  "{key}"'):
            return f"config.json:{number}:3"
    raise AssertionError(key)


# --------------------------------------------------------------------------- attribute aliases

GPT2 = {  # GPT2Config(): attribute_map n_layer/n_head/n_embd/n_positions
    "model_type": "gpt2",
    "n_layer": 12,
    "n_head": 12,
    "n_embd": 768,
    "n_positions": 1024,
    "n_inner": None,
    "activation_function": "gelu_new",
    "resid_pdrop": 0.1,
    "layer_norm_epsilon": 1e-05,
    "scale_attn_weights": True,
    "reorder_and_upcast_attn": False,
    "scale_attn_by_inverse_layer_idx": False,
    "vocab_size": 50257,
}


def test_gpt2_spellings_import():
    # GPT2Attention: 12 heads of n_embd 768 / n_head 12 = 64, one K/V per head; per token
    # per layer 2 x 12 x 64 x 2 B (bf16) = 3,072 B. On aa9b447: KV304 no num_hidden_layers.
    family = _family(GPT2, kv_cache_dtype="bf16")
    model = family.models[0]
    assert (model.layers.count, model.max_seq_len) == (12, 1024)
    kinds = layer_kinds(model)
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(12, 64)}
    assert 2 * kinds[0].kv_heads * kinds[0].head_dim * 2 == 3072


def test_unknown_fields_that_cannot_move_the_cache_are_noted_not_refused():
    # scale_attn_weights / reorder_and_upcast_attn / activation_function name no cache shape.
    text, diagnostics, notes = _import(GPT2, kv_cache_dtype="bf16")
    assert diagnostics == [] and text is not None
    assert any("KV302 [warning]" in n and "'scale_attn_weights'" in n for n in notes)
    assert "# note: KV302 unknown config field 'scale_attn_weights'" in text
    config = {**GPT2, "kv_sharing_stride": 2}  # names the cache: still refused
    text, diagnostics, _ = _import(config, kv_cache_dtype="bf16")
    assert text is None
    assert diagnostics == [
        f"{_position(config, 'kv_sharing_stride')}: KV302 unknown config field "
        "'kv_sharing_stride'; its name says it may change a cache's shape, count, window, "
        "dtype or state (fix: check the model's attention code, then pass --ignore-field "
        "kv_sharing_stride)"
    ]


def test_a_noted_field_name_cannot_break_the_spec_comment():
    text, diagnostics, _ = _import({**GPT2, "odd\nfamily: x": 1}, kv_cache_dtype="bf16")
    assert diagnostics == [] and text is not None
    assert "family: x" not in text.replace("odd\\nfamily: x", "")
    assert load_bytes("s.yaml", text.encode()).family.family == "gpt2"  # type: ignore[union-attr]


FALCON_7B = {  # FalconConfig() defaults = tiiuae/falcon-7b
    "model_type": "falcon",
    "num_hidden_layers": 32,
    "num_attention_heads": 71,
    "hidden_size": 4544,
    "multi_query": True,
    "new_decoder_architecture": False,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}


def test_falcon_multi_query_caches_one_kv_head():
    # FalconAttention: num_kv_heads = 1 when multi_query and not new_decoder_architecture;
    # head_dim 4544 / 71 = 64. On aa9b447: 71 KV heads (after --ignore-field multi_query).
    kinds = layer_kinds(_family(FALCON_7B).models[0])
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(1, 64)}


def test_falcon_new_decoder_architecture_groups_kv_heads():
    # falcon-40b: new_decoder_architecture, num_kv_heads 8, 128 heads of 8192 / 128 = 64.
    config = {
        **FALCON_7B,
        "new_decoder_architecture": True,
        "num_attention_heads": 128,
        "num_kv_heads": 8,
        "hidden_size": 8192,
    }
    kinds = layer_kinds(_family(config).models[0])
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(8, 64)}


def test_falcon_without_multi_query_caches_every_head():
    config = {**FALCON_7B, "multi_query": False, "num_kv_heads": 7}  # num_kv_heads unused
    kinds = layer_kinds(_family(config).models[0])
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(71, 64)}


def test_gpt_bigcode_multi_query():
    config = {  # GPTBigCodeConfig(): kv_heads = 1 if multi_query
        "model_type": "gpt_bigcode",
        "n_layer": 12,
        "n_head": 12,
        "n_embd": 768,
        "n_positions": 1024,
        "multi_query": True,
    }
    kinds = layer_kinds(_family(config, kv_cache_dtype="bf16").models[0])
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(1, 64)}


def test_jetmoe_head_dim_is_kv_channels():
    # JetMoeConfig: attribute_map head_dim -> kv_channels 128; num_attention_heads is
    # num_key_value_heads 16 x num_experts_per_tok 2 = 32, so hidden 2048 / 32 = 64 is wrong.
    config = {
        "model_type": "jetmoe",
        "num_hidden_layers": 24,
        "hidden_size": 2048,
        "num_key_value_heads": 16,
        "num_attention_heads": 32,
        "kv_channels": 128,
        "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16",
    }
    kinds = layer_kinds(_family(config).models[0])
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(16, 128)}


def test_gemma4_global_layers_take_their_head_dim_from_per_layer_config():
    # Gemma4TextConfig: full layers' per_layer_config head_dim = global_head_dim 512; sliding
    # layers head_dim 256. Per token: sliding 2 x 4 x 256 x 2 = 4,096 B, full 8,192 B.
    layer_types = (["sliding_attention"] * 5 + ["full_attention"]) * 2
    config = {
        "model_type": "gemma4_text",
        "num_hidden_layers": 12,
        "layer_types": layer_types,
        "num_key_value_heads": 4,
        "num_attention_heads": 8,
        "head_dim": 256,
        "sliding_window": 512,
        "max_position_embeddings": 131072,
        "per_layer_config": {"05": {"head_dim": 512}, "11": {"head_dim": 512}},
        "attention_k_eq_v": False,
        "torch_dtype": "bfloat16",
    }
    kinds = layer_kinds(_family(config).models[0])
    assert [k.head_dim for k in kinds] == ([256] * 5 + [512]) * 2
    assert [k.attention for k in kinds] == (["sliding"] * 5 + ["full"]) * 2


def test_per_layer_config_past_the_last_layer_is_refused():
    config = {
        "model_type": "gemma4_text",
        "num_hidden_layers": 2,
        "num_key_value_heads": 4,
        "num_attention_heads": 8,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "per_layer_config": {"05": {"head_dim": 512}},
        "torch_dtype": "bfloat16",
    }
    text, diagnostics, _ = _import(config)
    assert text is None
    assert diagnostics[0].startswith(f"{_position(config, 'per_layer_config')}: KV305 ")
    assert "names a layer past num_hidden_layers 2" in diagnostics[0]


# --------------------------------------------------------------------------- refusals


def test_v_head_dim_unlike_k_imports_as_the_kinds_v_head_dim():
    # MiMo-V2-Flash-style attention: V 128 where K is 192 (vLLM Attention(head_size=192,
    # head_size_v=128)). Hand: 4 KV heads x (192 + 128) x 2 B = 2,560 B per layer and token;
    # 4 layers: 10,240 B per token (a K-sized V would be 4 x 4 x 2 x 192 x 2 = 12,288).
    config = {
        "model_type": "llama",
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 192,
        "v_head_dim": 128,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }
    text, diagnostics, _ = _import(config)
    assert diagnostics == [] and text is not None
    assert "v_head_dim: 128  # config.json v_head_dim" in text
    model = _family(config).models[0]
    (kind,) = model.layer_kinds.values()
    assert (kind.kv_heads, kind.head_dim, kind.v_head_dim) == (4, 192, 128)
    sizing = bound_module(_family(config))
    cost = sizing.cache_costs(model.name, max_batch_size=1, max_num_tokens=512, max_seq_len=8192)
    assert cost["target"].slope == 10240


def test_v_head_dim_equal_to_k_is_left_out():
    config = {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "v_head_dim": 128,
        "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16",
    }
    text, diagnostics, _ = _import(config)
    assert diagnostics == [] and text is not None and "v_head_dim" not in text


def test_falcon_h1_imports_each_layer_with_kv_and_a_mamba2_state():
    # FalconH1Config: every layer is FalconH1DecoderLayer (attention + Mamba-2 mixer).
    # mamba_d_head "auto" (the class default) = mamba_d_ssm 1536 / mamba_n_heads 24 = 64.
    # Hand, bf16 at tp 1: K/V 2 KV heads x 2 x 64 x 2 B = 512 B per layer and token; state
    # conv (4 - 1) x (24 x 64 + 2 x 1 x 256) x 2 B = 12,288 + ssm 24 x 64 x 256 x 2 B =
    # 786,432: 798,720 B per request and layer.
    config = {
        "model_type": "falcon_h1",
        "num_hidden_layers": 36,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "hidden_size": 1024,
        "mamba_d_ssm": 1536,
        "mamba_n_heads": 24,
        "mamba_d_head": "auto",
        "mamba_n_groups": 1,
        "mamba_d_state": 256,
        "mamba_d_conv": 4,
        "ssm_multipliers": [1.0, 1.0, 1.0, 1.0, 1.0],
        "max_position_embeddings": 16384,
        "torch_dtype": "bfloat16",
    }
    model = _family(config).models[0]
    (kind,) = model.layer_kinds.values()
    assert kind.attention == "full" and kind.parallel_state
    assert (kind.kv_heads, kind.head_dim) == (2, 128)  # hidden_size 1024 / 8 heads
    assert kind.mamba is not None
    assert (kind.mamba.num_heads, kind.mamba.head_dim, kind.mamba.d_state) == (24, 64, 256)
    sizing = bound_module(_family(config))
    terms = sizing.cost_terms(model.name, max_batch_size=1, max_num_tokens=512,
                              max_seq_len=16384)["target"]  # fmt: skip
    assert terms["slope"] == 36 * 2 * 2 * 128 * 2  # 36,864 B per token
    assert terms["per_request"] == 36 * (3 * (24 * 64 + 2 * 256) * 2 + 24 * 64 * 256 * 2)


ZAMBA2 = {  # Zamba2-2.7B's shape as published: layers_block_type in the legacy spelling, no
    # derived attention_head_dim / mamba_headdim saved, kv_channels hidden / heads
    "model_type": "zamba2",
    "num_hidden_layers": 4,
    "layers_block_type": ["mamba", "mamba", "hybrid", "mamba"],
    "hidden_size": 2560,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "kv_channels": 80,
    "n_mamba_heads": 80,
    "mamba_expand": 2,
    "mamba_d_state": 64,
    "mamba_ngroups": 1,
    "mamba_d_conv": 4,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}


def test_zamba2_hybrid_layers_hold_kv_beside_a_mamba2_state():
    # Zamba2Config.__post_init__: attention_head_dim = 2 x 2,560 // 32 = 160 (the shared block
    # attends over [hidden, embeddings]), not kv_channels 80; mamba_headdim = 2 x 2,560 // 80
    # = 64. Zamba2HybridDynamicCache: the hybrid layer a K/V of 32 x 160 beside its Mamba-2
    # state; the others the state only. Per token 2 x 32 x 160 x 2 B = 20,480 B; state conv
    # (4 - 1) x (80 x 64 + 2 x 1 x 64) x 2 B = 31,488 B + SSM 80 x 64 x 64 x 2 B = 655,360 B.
    kinds = layer_kinds(_family(ZAMBA2).models[0])
    assert [k.attention for k in kinds] == ["recurrent", "recurrent", "full", "recurrent"]
    hybrid = kinds[2]
    assert (hybrid.kv_heads, hybrid.head_dim) == (32, 160)
    assert 2 * hybrid.kv_heads * hybrid.head_dim * 2 == 20_480
    for kind in (kinds[0], hybrid):
        state = kind.recurrent_dims
        assert (state.num_heads, state.head_dim, state.d_state, state.n_groups) == (80, 64, 64, 1)
        conv = (state.d_conv - 1) * (80 * 64 + 2 * 64) * 2
        assert (conv, 80 * 64 * 64 * 2) == (31_488, 655_360)


def test_zamba2_long_context_and_contradictions_as_its_config_class_reads_them():
    long = _family({**ZAMBA2, "use_long_context": True}).models[0]
    assert long.max_seq_len == 16_384  # Zamba2Config: use_long_context sets 16,384
    bad = {**ZAMBA2, "attention_head_dim": 80}
    text, diagnostics, _ = _import(bad)
    assert text is None and len(diagnostics) == 1
    assert diagnostics[0].startswith(f"{_position(bad, 'attention_head_dim')}: KV303 ")
    bare = {k: v for k, v in ZAMBA2.items() if k != "layers_block_type"}
    text, diagnostics, _ = _import(bare)
    assert text is None and len(diagnostics) == 1 and "layers_block_type" in diagnostics[0]


def test_zamba2_matches_the_cache_transformers_allocated():
    # the corpus: Zamba2Config() cut to 7 layers, 6 Mamba-2 + 1 hybrid; transformers measured
    # 5,120 K and V elements per token (32 x 160) and 1,394,688 B of state per layer (fp32:
    # conv 4 columns x 5,248 x 4 B = 83,968 B + SSM 8 x 640 x 64 x 4 B = 1,310,720 B)
    from tests.cli.hf_corpus import load_corpus, verdict

    entry = next(e for e in load_corpus()["entries"] if e["model_type"] == "zamba2")
    assert entry["layers"][-1]["k_per_token"] == 5_120
    assert {layer["state_bytes"] for layer in entry["layers"]} == {1_394_688}
    assert verdict(entry).verdict == "match"


def test_falcon_h1_mamba_head_that_disagrees_is_refused():
    config = {
        "model_type": "falcon_h1",
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "hidden_size": 1024,
        "mamba_d_ssm": 1536,
        "mamba_n_heads": 24,
        "mamba_d_head": 32,
        "mamba_n_groups": 1,
        "mamba_d_state": 256,
        "mamba_d_conv": 4,
        "max_position_embeddings": 16384,
        "torch_dtype": "bfloat16",
    }
    text, diagnostics, _ = _import(config)
    assert text is None and len(diagnostics) == 1
    assert diagnostics[0].startswith(f"{_position(config, 'mamba_d_head')}: KV30")
    assert "is not the Mamba inner size 1536" in diagnostics[0]


def test_encoder_decoder_is_one_clear_diagnostic():
    config = {  # WhisperConfig(): encoder_layers/decoder_layers, no num_hidden_layers
        "model_type": "whisper",
        "is_encoder_decoder": True,
        "encoder_layers": 4,
        "decoder_layers": 4,
        "d_model": 384,
        "decoder_attention_heads": 6,
        "max_target_positions": 448,
    }
    text, diagnostics, _ = _import(config)
    assert text is None
    assert len(diagnostics) == 1
    assert diagnostics[0].startswith(f"{_position(config, 'is_encoder_decoder')}: KV305 ")
    assert "encoder-decoder model" in diagnostics[0]


def test_t5_is_one_clear_encoder_decoder_diagnostic():
    # T5Config spells its sizes d_model / d_kv / num_layers and saves num_decoder_layers; at
    # 54a882f each unknown spelling was its own KV302 (--ignore-field d_model, ...). One KV305
    # now, at is_encoder_decoder, or at num_decoder_layers where the flag is not saved.
    config = {
        "model_type": "t5",
        "architectures": ["T5ForConditionalGeneration"],
        "d_model": 512,
        "d_kv": 64,
        "num_heads": 8,
        "num_layers": 6,
        "num_decoder_layers": 6,
        "is_encoder_decoder": True,
        "torch_dtype": "float32",
    }
    for key in ("is_encoder_decoder", "num_decoder_layers"):
        text, diagnostics, _ = _import(config)
        assert text is None and len(diagnostics) == 1, diagnostics
        assert diagnostics[0].startswith(f"{_position(config, key)}: KV305 ")
        assert "encoder-decoder model" in diagnostics[0]
        config = {k: v for k, v in config.items() if k != "is_encoder_decoder"}


# --------------------------------------------------------------------------- saved forms


def test_nemotron_h_saved_by_transformers5():
    # NemotronHConfig saves layers_block_type (Mamba-2 layers as linear_attention) and may
    # omit num_hidden_layers; Mamba-2: conv (4-1) x (8 x 16 + 2 x 1 x 32) + 8 x 16 x 32.
    config = {
        "model_type": "nemotron_h",
        "layers_block_type": ["linear_attention", "mlp", "full_attention", "moe"],
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "hidden_size": 512,
        "mamba_num_heads": 8,
        "mamba_head_dim": 16,
        "ssm_state_size": 32,
        "n_groups": 1,
        "conv_kernel": 4,
        "max_position_embeddings": 4096,
        "mtp_layers_block_type": ["full_attention", "moe"],  # saved even without MTP layers
        "torch_dtype": "bfloat16",
    }
    model = _family(config).models[0]
    kinds = layer_kinds(model)
    assert model.layers.count == 4
    assert [k.attention for k in kinds] == ["recurrent", "none", "full", "none"]
    state = kinds[0].mamba
    assert state is not None
    assert (state.num_heads, state.head_dim, state.d_state, state.n_groups) == (8, 16, 32, 1)


def test_granitemoehybrid_linear_attention_is_mamba2():
    config = {  # GraniteMoeHybridConfig: layer_types defaults to linear_attention = Mamba-2
        "model_type": "granitemoehybrid",
        "num_hidden_layers": 2,
        "layer_types": ["linear_attention", "attention"],
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "hidden_size": 512,
        "mamba_n_heads": 8,
        "mamba_d_head": 16,
        "mamba_d_state": 32,
        "mamba_n_groups": 1,
        "mamba_d_conv": 4,
        "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16",
    }
    kinds = layer_kinds(_family(config).models[0])
    assert [k.attention for k in kinds] == ["recurrent", "full"]
    assert kinds[0].mamba is not None and kinds[0].mamba.num_heads == 8


def test_qwen2_moe_sliding_window_zero_when_off():
    config = {  # Qwen2MoeConfig(): sliding_window saved as 0 when use_sliding_window is false
        "model_type": "qwen2_moe",
        "num_hidden_layers": 4,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "hidden_size": 2048,
        "use_sliding_window": False,
        "sliding_window": 0,
        "max_window_layers": 28,
        "max_position_embeddings": 32768,
        "torch_dtype": "bfloat16",
    }
    kinds = layer_kinds(_family(config).models[0])
    assert {(k.attention, k.kv_heads, k.head_dim) for k in kinds} == {("full", 16, 128)}


MAMBA = {  # MambaConfig(): no max_position_embeddings at all
    "model_type": "mamba",
    "num_hidden_layers": 2,
    "hidden_size": 768,
    "state_size": 16,
    "expand": 2,
    "conv_kernel": 4,
    "torch_dtype": "bfloat16",
}


def test_pure_ssm_without_a_context_length_names_the_flag():
    text, diagnostics, _ = _import(MAMBA)
    assert text is None
    assert "--max-seq-len" in diagnostics[0]
    assert diagnostics[0].startswith("config.json:1:1: KV304 ")


def test_pure_mamba_imports_with_max_seq_len():
    # MambaMixer: conv d_inner 2 x 768 = 1,536 channels x (4 - 1) x 2 B = 9,216 B, SSM
    # 1,536 x 16 x 2 B = 49,152 B: 58,368 B per layer per request (engines keep d_conv - 1).
    model = _family(MAMBA, max_seq_len=4096).models[0]
    kinds = layer_kinds(model)
    assert model.max_seq_len == 4096
    state = kinds[0].mamba1
    assert state is not None and (state.d_inner, state.d_state, state.d_conv) == (1536, 16, 4)
    assert state.d_inner * 3 * 2 + state.d_inner * 16 * 2 == 58368


def test_pure_mamba2_imports_with_max_seq_len():
    # Mamba2Config: num_heads 24 x head_dim 64 are SSM heads; conv 3 x (1,536 + 2 x 1 x 128)
    # x 2 B = 10,752 B + SSM 24 x 64 x 128 x 2 B = 393,216 B = 403,968 B per layer.
    config = {
        "model_type": "mamba2",
        "num_hidden_layers": 2,
        "hidden_size": 768,
        "num_heads": 24,
        "head_dim": 64,
        "state_size": 128,
        "n_groups": 1,
        "expand": 2,
        "conv_kernel": 4,
        "torch_dtype": "bfloat16",
    }
    kinds = layer_kinds(_family(config, max_seq_len=4096).models[0])
    state = kinds[0].mamba
    assert state is not None
    assert (state.num_heads, state.head_dim, state.d_state, state.n_groups) == (24, 64, 128, 1)
    conv = (state.d_conv - 1) * (24 * 64 + 2 * 128) * 2
    assert conv + 24 * 64 * 128 * 2 == 403968


def test_max_seq_len_caps_never_raises_the_native_length():
    config = {**GPT2, "torch_dtype": "bfloat16"}
    assert _family(config, max_seq_len=512).models[0].max_seq_len == 512
    text, diagnostics, _ = _import(config, max_seq_len=4096)
    assert text is None
    assert "--max-seq-len 4096 is past the config's n_positions 1024" in diagnostics[0]


# --------------------------------------------------------------------------- dtype and notes


def test_kv_cache_scheme_fp8_is_the_cache_dtype():
    config = {
        **FALCON_7B,
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"},
        },
    }
    assert _family(config).kv_cache_dtype == "fp8"
    config["quantization_config"]["kv_cache_scheme"] = {"num_bits": 4, "type": "int"}
    text, diagnostics, _ = _import(config)
    assert text is None
    assert diagnostics[0].startswith(f"{_position(config, 'quantization_config')}: KV305 ")


def test_float32_and_rope_scaling_are_noted():
    config = {
        **FALCON_7B,
        "torch_dtype": "float32",
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0},
    }
    text, diagnostics, notes = _import(config)
    assert diagnostics == [] and text is not None
    assert [n.split(": ", 1)[0] for n in notes] == [
        _position(config, "torch_dtype"),
        _position(config, "rope_scaling"),
    ]
    assert all("KV314 [warning]" in n for n in notes)
    assert "# note: KV314 torch_dtype float32: the KV cache imports as fp32" in text
    assert "# note: KV314 rope_scaling: 'yarn' scaling by 4.0" in text


def test_a_hybrid_layer_type_names_its_feature():
    config = {  # ZayaConfig: every layer attention and a recurrent state at once
        "model_type": "zaya",
        "num_hidden_layers": 2,
        "layer_types": ["hybrid", "hybrid"],
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }
    text, diagnostics, _ = _import(config)
    assert text is None and len(diagnostics) == 1
    assert diagnostics[0].startswith(f"{_position(config, 'layer_types')}: KV305 ")
    # ZayaCCAProjection: the state is a conv window over q, k and a delayed V, not Mamba-2's
    assert "a KV cache, ZAYA's Compressed Convolutional Attention" in diagnostics[0]
    # another model's hybrid layers: both caches, and the one parallel form the spec has
    text, diagnostics, _ = _import({**config, "model_type": "some_hybrid"})
    assert "both a KV cache and a recurrent state of its own" in diagnostics[0]
    assert "only for a Mamba-2 state beside full attention" in diagnostics[0]


def test_cpmant_dim_head():
    # CpmAntAttention: num_attention_heads 32 heads of dim_head 128 cached, no context field.
    config = {
        "model_type": "cpmant",
        "num_hidden_layers": 4,
        "num_attention_heads": 32,
        "dim_head": 128,
        "hidden_size": 4096,
        "position_bias_max_distance": 2048,
        "torch_dtype": "bfloat16",
    }
    kinds = layer_kinds(_family(config, max_seq_len=2048).models[0])
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(32, 128)}


def test_mamba_channels_are_intermediate_size_as_mamba_mixer_reads_them():
    # MambaMixer sizes its states by config.intermediate_size. The corpus's shrunk MambaConfig
    # (intermediate_size 64, expand 2 x hidden 768) made transformers allocate 5,120 B per
    # layer at fp32: conv 64 x 4 x 4 B + SSM 64 x 16 x 4 B (it keeps all d_conv columns);
    # the engines' layout keeps d_conv - 1: 64 x 3 x 4 + 64 x 16 x 4 = 4,864 B.
    config = {**MAMBA, "intermediate_size": 64, "torch_dtype": "float32"}
    state = layer_kinds(_family(config, max_seq_len=4096).models[0])[0].mamba1
    assert state is not None and state.d_inner == 64
    assert 64 * 4 * 4 + 64 * 16 * 4 == 5120
    assert state.d_inner * (state.d_conv - 1) * 4 + state.d_inner * state.d_state * 4 == 4864


def test_mtp_layer_kinds_block_only_a_model_with_mtp_layers():
    config = {**FALCON_7B, "mtp_layers_block_type": ["full_attention"], "mtp_num_hidden_layers": 1}
    text, diagnostics, _ = _import(config)
    assert text is None
    assert "KV302 unknown config field 'mtp_layers_block_type'" in diagnostics[0]


def test_mimo_v2_flash_sliding_layers_hold_twice_the_kv_heads():
    # MiMoV2FlashConfig() cut to 4 layers; transformers MiMoV2FlashAttention gives is_swa
    # layers 2 x num_key_value_heads, K 192 and V 128 everywhere. Per layer and token in bf16:
    # full 4 x (192 + 128) x 2 = 2,560 B; sliding 8 x (192 + 128) x 2 = 5,120 B (the corpus
    # measured K 1,536 + V 1,024 fp32 elements on the sliding layers: 8 x 192 and 8 x 128).
    config = {
        "model_type": "mimo_v2_flash",
        "num_hidden_layers": 4,
        "num_attention_heads": 64,
        "num_key_value_heads": 4,
        "head_dim": 192,
        "v_head_dim": 128,
        "hidden_size": 4096,
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                        "sliding_attention"],
        "sliding_window": 129,
        "attention_value_scale": 0.707,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }  # fmt: skip
    model = _family(config).models[0]
    kinds = layer_kinds(model)
    assert [(k.attention, k.kv_heads, k.head_dim, k.v_head_dim) for k in kinds] == [
        ("full", 4, 192, 128),
        *[("sliding", 8, 192, 128)] * 3,
    ]
    assert 4 * (192 + 128) * 2 == 2560 and 8 * (192 + 128) * 2 == 5120
