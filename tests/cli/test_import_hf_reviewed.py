"""The KV302 refusals the transformers corpus left (issue 22), each reviewed: a field that
cannot move a cache is known (with its reason), one that places layers is read the way its
config class reads it, and one that announces a cache kvgen cannot express gives way to the
KV305 naming that feature.

The configs are the saved forms of the named transformers 5.24.0 config classes, cut to the
fields that matter; each expected shape is derived by hand from the class's code, named next
to the test (the corpus fixture holds the cache transformers allocated for its defaults)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._importhf import import_config
from kvgen._spec.loader import load_bytes
from kvgen._spec.models import Model

from tests.generated.test_families import layer_kinds

BASE = {  # a Llama-shaped decoder: 4 layers, 8 KV heads of 128
    "model_type": "llama",
    "num_hidden_layers": 4,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}


def _import(config: dict) -> tuple[str | None, list[str]]:
    result = import_config("config.json", json.dumps(config, indent=2))
    return result.text, [d.render() for d in result.diagnostics]


def _model(config: dict) -> Model:
    text, diagnostics = _import(config)
    assert diagnostics == [], diagnostics
    assert text is not None
    loaded = load_bytes("imported.yaml", text.encode())
    assert loaded.family is not None, loaded.diagnostics
    return loaded.family.models[0]


def _at(config: dict, key: str) -> str:
    for number, line in enumerate(json.dumps(config, indent=2).splitlines(), start=1):
        if line.startswith(f'  "{key}"'):
            return f"config.json:{number}:3"
    raise AssertionError(key)


def _one_refusal(config: dict, code: str, key: str) -> str:
    text, diagnostics = _import(config)
    assert text is None
    assert len(diagnostics) == 1, diagnostics
    assert diagnostics[0].startswith(f"{_at(config, key)}: {code} "), diagnostics[0]
    return diagnostics[0]


# --------------------------------------------------------------------------- reviewed fields


@pytest.mark.parametrize(
    ("model_type", "field", "value"),
    [
        ("doge", "keep_window_size", 2048),  # DogeAttention: top-k over a full DynamicLayer
        ("laguna", "num_attention_heads_per_layer", [32, 32, 32, 32]),  # query heads only
        ("minimax_m3_vl_text", "index_block_size", 128),  # block selection over a full cache
        ("roformer", "rotary_value", True),  # rotates values; their shape stays
        ("hy_v4", "learnable_sink_init", 0.0),  # a per-head sink weight's init
        ("olmo_hybrid", "linear_a_log_max", 16.0),  # a Gated DeltaNet clamp
    ],
)
def test_a_reviewed_field_imports_the_attention_cache(model_type, field, value):
    model = _model({**BASE, "model_type": model_type, field: value})
    kinds = layer_kinds(model)
    # 8 KV heads x 128 on each of 4 full layers, as without the field
    assert [(k.attention, k.kv_heads, k.head_dim) for k in kinds] == [("full", 8, 128)] * 4


def test_a_field_reviewed_for_one_model_still_blocks_another():
    # BigBird's block_size is its encoder's sparse pattern; on another model the same name
    # could be a cache block, so it is still KV302 there.
    _model({**BASE, "model_type": "big_bird", "block_size": 64})
    message = _one_refusal({**BASE, "block_size": 64}, "KV302", "block_size")
    assert "unknown config field 'block_size'" in message


# --------------------------------------------------------------------------- read fields


def test_gpt_neo_local_layers_slide_by_window_size():
    # GPTNeoSelfAttention: a local layer masks keys window_size or more back (a window of
    # 256); attention_layers [global, local] x 2 -> pattern [full, sliding].
    config = {
        "model_type": "gpt_neo",
        "num_layers": 4,
        "num_heads": 16,
        "hidden_size": 2048,
        "attention_layers": ["global", "local", "global", "local"],
        "attention_types": [[["global", "local"], 2]],
        "window_size": 256,
        "max_position_embeddings": 2048,
        "torch_dtype": "float16",
    }
    kinds = layer_kinds(_model(config))
    # head_dim 2048 / 16 = 128; GPT-Neo has no GQA: 16 KV heads
    assert [(k.attention, k.window, k.kv_heads, k.head_dim) for k in kinds] == [
        ("full", None, 16, 128),
        ("sliding", 256, 16, 128),
    ] * 2
    del config["attention_layers"]  # GPTNeoConfig expands attention_types into it
    assert [k.attention for k in layer_kinds(_model(config))] == ["full", "sliding"] * 2
    config["attention_types"] = [[["global", "local"], 3]]  # 6 entries for 4 layers
    assert "must name 4 layers" in _one_refusal(config, "KV303", "attention_types")


def test_modernbert_decoder_window_is_half_its_local_attention():
    # ModernBertDecoderConfig: sliding_window = local_attention // 2 = 64; layers with
    # i % global_attn_every_n_layers (3) == 0 global: 0 and 3.
    config = {
        "model_type": "modernbert-decoder",
        "num_hidden_layers": 4,
        "num_attention_heads": 12,
        "hidden_size": 768,
        "local_attention": 128,
        "max_position_embeddings": 8192,
        "torch_dtype": "float32",
    }
    kinds = layer_kinds(_model(config))
    assert [(k.attention, k.window) for k in kinds] == [
        ("full", None),
        ("sliding", 64),
        ("sliding", 64),
        ("full", None),
    ]
    saved = {  # what save_pretrained writes: the derived list and window beside the span
        **config,
        "layer_types": ["full_attention", *["sliding_attention"] * 2, "full_attention"],
        "sliding_window": 64,
        "global_attn_every_n_layers": 3,
    }
    assert [k.window for k in layer_kinds(_model(saved))] == [None, 64, 64, None]
    message = _one_refusal({**saved, "sliding_window": 128}, "KV303", "sliding_window")
    assert "local_attention 128 // 2" in message


def test_bamba_attention_sits_at_attn_layer_indices():
    # BambaConfig.layers_block_type: full_attention at attn_layer_indices, Mamba-2 elsewhere;
    # Mamba-2 conv (4 - 1) x (8 x 16 + 2 x 1 x 32) = 576, ssm 8 x 16 x 32.
    config = {
        **BASE,
        "model_type": "bamba",
        "attn_layer_indices": [1],
        "mamba_n_heads": 8,
        "mamba_d_head": 16,
        "mamba_d_state": 32,
        "mamba_n_groups": 1,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
    }
    kinds = layer_kinds(_model(config))
    assert [k.attention for k in kinds] == ["recurrent", "full", "recurrent", "recurrent"]
    state = kinds[0].mamba
    assert state is not None
    assert (state.num_heads, state.head_dim, state.d_state, state.n_groups) == (8, 16, 32, 1)
    config["attn_layer_indices"] = None  # the class default: every layer Mamba-2
    assert {k.attention for k in layer_kinds(_model(config))} == {"recurrent"}
    config["attn_layer_indices"] = [4]
    assert "distinct layers in [0, 4)" in _one_refusal(config, "KV303", "attn_layer_indices")


def test_cohere2_moe_restarts_its_pattern_after_the_dense_prefix():
    # Cohere2MoeConfig: the first_k_dense_replace (2) layers by prefix_dense_sliding_window_
    # pattern 1 -> both global; the other 4 by sliding_window_pattern 4, counted from 0 ->
    # sliding, sliding, sliding, global.
    config = {
        **BASE,
        "model_type": "cohere2_moe",
        "num_hidden_layers": 6,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
        "prefix_dense_sliding_window_pattern": 1,
        "first_k_dense_replace": 2,
    }
    expected = ["full", "full", "sliding", "sliding", "sliding", "full"]  # + "_attention": saved
    assert [k.attention for k in layer_kinds(_model(config))] == expected
    # the list the class saves agrees with its own pattern (it was refused as KV303)
    saved = {**config, "layer_types": [f"{k}_attention" for k in expected]}
    assert [k.attention for k in layer_kinds(_model(saved))] == expected


MLA = {
    "model_type": "hy_v4",
    "num_hidden_layers": 4,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "hidden_size": 2816,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "index_head_dim": 128,
    "layer_types": ["indexed_attention"] * 4,
    "max_position_embeddings": 262144,
    "torch_dtype": "bfloat16",
}


def test_a_shared_indexer_layer_caches_no_indexer_keys():
    # HYV4Attention: indexer_types "shared" -> skip_topk, no indexer (no indexer key cache);
    # the MLA latent (512 + 64) stays on every layer.
    config = {**MLA, "indexer_types": ["full", "full", "shared", "shared"]}
    kinds = layer_kinds(_model(config))
    assert [(k.kv_lora_rank, k.qk_rope_head_dim) for k in kinds] == [(512, 64)] * 4
    assert [k.index_head_dim for k in kinds] == [128, 128, None, None]
    config["indexer_types"] = ["shared", "full", "full", "full"]  # nothing to share from
    assert "the first full" in _one_refusal(config, "KV303", "indexer_types")


def test_hrm_counts_a_cache_slot_per_stack_run():
    # HrmTextConfig: num_hidden_layers = num_layers_per_stack 16 x H_cycles 2 x
    # (L_cycles 3 + 1) = 128 slots; a legacy config gives the stack's 16 layers instead.
    config = {
        **BASE,
        "model_type": "hrm_text",
        "num_hidden_layers": 128,
        "num_layers_per_stack": 16,
        "H_cycles": 2,
        "L_cycles": 3,
    }
    assert _model(config).layers.count == 128
    legacy = {**config, "num_hidden_layers": 16}
    del legacy["num_layers_per_stack"]
    assert _model(legacy).layers.count == 128
    config["num_hidden_layers"] = 16
    assert "is not num_hidden_layers 16" in _one_refusal(config, "KV303", "num_layers_per_stack")


def test_a_head_dim_that_does_not_divide_is_rounded_down_as_transformers_does():
    # Glm4MoeConfig() saves no head_dim: Glm4MoeAttention and vLLM's glm4_moe.py take
    # hidden_size // num_attention_heads = 4096 // 96 = 42 (the corpus cache: 8 x 42).
    config = {**BASE, "model_type": "glm4_moe", "num_attention_heads": 96}
    del config["head_dim"]
    kinds = layer_kinds(_model(config))
    assert {(k.kv_heads, k.head_dim) for k in kinds} == {(8, 42)}


# --------------------------------------------------------------------------- the real feature


def test_a_conv_layer_is_named_not_its_unknown_cache_length():
    # Lfm3Config: conv layers hold a short-convolution state of conv_L_cache columns
    config = {
        **BASE,
        "model_type": "lfm3",
        "conv_L_cache": 7,
        "layer_types": ["conv", "conv", "full_attention", "sliding_attention"],
        "sliding_window": 256,
    }
    assert "short-convolution layer" in _one_refusal(config, "KV305", "layer_types")


def test_a_parallel_hybrid_layer_is_named_not_its_swa_fields():
    config = {  # InklingTextConfig: linear attention beside sliding attention in each layer
        **BASE,
        "model_type": "inkling_text",
        "layer_types": ["hybrid_sliding", "hybrid_sliding", "hybrid_sliding", "hybrid"],
        "conv_kernel_size": 4,
        "sliding_window_size": 512,
        "swa_num_key_value_heads": 16,
    }
    assert "parallel hybrid" in _one_refusal(config, "KV305", "layer_types")


def test_indexed_attention_without_mla_is_named_not_its_indexer_fields():
    config = {  # Qwen4ExpTextConfig: QSA indexer fields beside Gated DeltaNet layers
        **BASE,
        "model_type": "qwen4_exp_text",
        "layer_types": ["full_attention", "full_attention", "full_attention", "indexed_attention"],
        "indexer_head_dim": 128,
        "indexer_kv_heads": 1,
    }
    assert "without MLA" in _one_refusal(config, "KV305", "layer_types")


def test_minimax_m3_sparse_layers_name_their_indexer_cache():
    config = {
        **BASE,
        "model_type": "minimax_m3_vl_text",
        "layer_types": ["full_attention", "minimax_m3_sparse"] * 2,
        "index_head_dim": 128,
        "index_block_size": 128,
    }
    assert "lightning-indexer key cache" in _one_refusal(config, "KV305", "layer_types")


@pytest.mark.parametrize(
    ("model_type", "why"),
    [("blt", "Byte Latent Transformer"), ("reformer", "LSH"), ("xlnet", "mem_len"),
     # issue 22: refused at 1:1 for a missing field before, or imported as a Llama when the
     # config had Llama-shaped fields (54a882f): each names its recurrent state now
     ("rwkv", "RWKV time-mix recurrent state"), ("xlstm", "xLSTM matrix-memory"),
     ("recurrent_gemma", "Griffin RG-LRU"),
     # the cache feature, not the weight sharing: each shared-block application has its own
     # K/V cache beside the layer's Mamba-1 state (ZambaHybridDynamicCache)
     ("zamba", "beside a Mamba-1 state")],
)  # fmt: skip
def test_architectures_without_a_kv_cache_kvgen_has_are_named(model_type, why):
    config = {**BASE, "model_type": model_type, "local_attention_window_len": 512}
    assert why in _one_refusal(config, "KV305", "model_type")


# --------------------------------------------------------------------------- Gemma 4 globals

GEMMA4 = {  # Gemma4TextConfig without per_layer_config: the builder fields in its place
    "model_type": "gemma4_text",
    "num_hidden_layers": 6,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "sliding_window": 512,
    "max_position_embeddings": 131072,
    "attention_k_eq_v": False,
    "torch_dtype": "bfloat16",
}


def test_gemma4_builder_fields_shape_the_full_layers_as_the_class_does():
    # Gemma4TextConfig.__post_init__: full layers get head_dim global_head_dim (default 512);
    # num_global_key_value_heads only when attention_k_eq_v (false here): 4 KV heads stay.
    shapes = [(k.kv_heads, k.head_dim) for k in layer_kinds(_model(GEMMA4))]
    assert shapes == [(4, 256)] * 5 + [(4, 512)]
    given = {**GEMMA4, "global_head_dim": 384, "num_global_key_value_heads": 1}
    shapes = [(k.kv_heads, k.head_dim) for k in layer_kinds(_model(given))]
    assert shapes == [(4, 256)] * 5 + [(4, 384)]


def test_gemma4_per_layer_config_overrules_the_builder_fields():
    # with per_layer_config given, global_head_dim is popped and dropped: full layer 5 is
    # 512 by its entry, full layer 11 (no entry) keeps head_dim 256, never 128
    config = {
        **GEMMA4,
        "num_hidden_layers": 12,
        "layer_types": GEMMA4["layer_types"] * 2,
        "global_head_dim": 128,
        "per_layer_config": {"5": {"head_dim": 512}},
    }
    shapes = [(k.kv_heads, k.head_dim) for k in layer_kinds(_model(config))]
    assert shapes == [(4, 256)] * 5 + [(4, 512)] + [(4, 256)] * 6


def test_embedding_gemma2_applies_its_global_kv_heads_ungated():
    # EmbeddingGemma2TextConfig declares no attention_k_eq_v: its full layers take
    # num_global_key_value_heads (default 1) and global_head_dim (default 512)
    config = {**GEMMA4, "model_type": "embedding_gemma2_text"}
    del config["attention_k_eq_v"]
    shapes = [(k.kv_heads, k.head_dim) for k in layer_kinds(_model(config))]
    assert shapes == [(4, 256)] * 5 + [(1, 512)]


# --------------------------------------------------------------------------- attribute_map

DEEPSEEK = {
    "model_type": "deepseek_v3",
    "num_hidden_layers": 4,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "hidden_size": 7168,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "max_position_embeddings": 163840,
    "torch_dtype": "bfloat16",
}


def test_num_mtp_layers_is_num_nextn_predict_layers():
    # DeepseekV3Config.attribute_map: num_mtp_layers -> num_nextn_predict_layers (1 MTP layer)
    text, diagnostics = _import({**DEEPSEEK, "num_mtp_layers": 1})
    assert diagnostics == [] and text is not None
    family = load_bytes("imported.yaml", text.encode()).family
    assert family is not None
    (mtp,) = family.speculative
    assert mtp.max_draft_len == 1
    assert "config.json num_mtp_layers" in text


def test_glm4_moe_lite_head_dim_is_the_rope_key():
    # Glm4MoeLiteConfig.attribute_map: head_dim -> qk_rope_head_dim; the MLA latent is
    # kv_lora_rank 512 + that RoPE key 64 per token
    config = {**DEEPSEEK, "model_type": "glm4_moe_lite", "head_dim": 64}
    del config["qk_rope_head_dim"]
    kinds = layer_kinds(_model(config))
    assert {(k.kv_lora_rank, k.qk_rope_head_dim) for k in kinds} == {(512, 64)}


def test_moss_encoder_layers_are_its_decoder_layers():
    # MossTranscribeDiarizeConfig.attribute_map: encoder_layers -> num_hidden_layers,
    # encoder_attention_heads -> num_attention_heads: a decoder-only model, not refused as
    # encoder-decoder; head_dim 4096 / 32 = 128
    config = {**BASE, "model_type": "moss_transcribe_diarize", "encoder_layers": 4}
    del config["num_hidden_layers"]
    model = _model(config)
    assert model.layers.count == 4
    assert {(k.kv_heads, k.head_dim) for k in layer_kinds(model)} == {(8, 128)}


def test_nemotron_h_layer_types_are_its_block_types():
    # NemotronHConfig.attribute_map: layer_types -> layers_block_type (mamba, attention,
    # mlp, moe); Mamba-2 conv (4 - 1) x (8 x 16 + 2 x 1 x 32) + 8 x 16 x 32
    config = {
        "model_type": "nemotron_h",
        "layer_types": ["mamba", "mlp", "attention", "moe"],
        "num_hidden_layers": 4,
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
        "torch_dtype": "bfloat16",
    }
    kinds = layer_kinds(_model(config))
    assert [k.attention for k in kinds] == ["recurrent", "none", "full", "none"]


ATTRIBUTE_MAPS = Path(__file__).parents[1] / "fixtures" / "hf" / "corpus"
# Spellings the importer needs no alias for: it reads both names itself
# (granitemoehybrid's layers_block_type), or refuses the model before any field is read.
_READ_BOTH = {("granitemoehybrid", "layers_block_type")}


def _refused_whole() -> set[str]:
    """Model types of the corpus refused before any field is read: architectures the spec
    cannot express and encoder-decoder models (one KV305 at model_type or the encoder's
    field)."""
    from tests.cli import hf_corpus

    out = set()
    for entry in hf_corpus.load_corpus()["entries"]:
        if "config" in entry:
            result = import_config("config.json", entry["config"], kv_cache_dtype="fp32")
            said = [d.message for d in result.diagnostics]
            if said and ("encoder-decoder model" in said[0] or said[0].startswith("model_type")):
                out.add(entry["model_type"])
    return out


def _read_names() -> set[str]:
    from kvgen._importhf._fields import CACHE_FIELDS

    return set(CACHE_FIELDS) | {"sliding_window_pattern"}


def test_every_attribute_map_spelling_of_a_read_field_is_read():
    # bench/hf_corpus.py --attribute-maps recorded every causal-LM config class's
    # attribute_map (alias -> the attribute it sets); the config.json may spell the field
    # either way, so the importer must read the alias as that field (and a class that stores
    # a field under another name, e.g. Bailing's max_position_embeddings in
    # model_max_length, is read under the stored name)
    from kvgen._importhf._fields import ALIASES, MODEL_ALIASES

    recorded = json.loads((ATTRIBUTE_MAPS / "attribute-maps-5.24.0.json").read_text())
    read = _read_names()
    missing = []
    for model_type, spellings in recorded["attribute_maps"].items():
        if model_type in _refused_whole():
            continue
        ours = {**ALIASES, **MODEL_ALIASES.get(model_type, {})}
        for alias, target in spellings.items():
            if "." in alias and not alias.startswith("text_config."):
                continue  # a vision or audio tower's own fields: no cache of the LM
            alias = alias.rsplit(".", 1)[-1]
            if (model_type, alias) in _READ_BOTH:
                continue
            if target in read and alias not in read and ours.get(alias) != target:
                missing.append((model_type, alias, target))
            if alias in read and target not in read and ours.get(target) != alias:
                missing.append((model_type, target, alias))
    assert missing == []


# --------------------------------------------------------------------------- quantized caches


@pytest.mark.parametrize(
    ("quantization_config", "layout"),
    [
        # ModelOpt's config.json form (vLLM get_kv_cache_quant_algo_string): FP8 -> fp8,
        # NVFP4 -> nvfp4, the legacy nested "quantization" block too
        ({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, "fp8"),
        (
            {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4"},
            "nvfp4",
        ),
        ({"quant_method": "modelopt", "quantization": {"kv_cache_quant_algo": "fp8"}}, "fp8"),
        (
            {
                "quant_method": "modelopt",
                "kv_cache_scheme": {"num_bits": 4, "type": "float", "dynamic": False},
            },
            "nvfp4",
        ),
    ],
)
def test_modelopt_kv_cache_quantization_is_the_cache_dtype(quantization_config, layout):
    text, diagnostics = _import({**BASE, "quantization_config": quantization_config})
    assert diagnostics == [] and text is not None
    family = load_bytes("imported.yaml", text.encode()).family
    assert family is not None and family.kv_cache_dtype == layout


def test_an_unknown_modelopt_kv_algorithm_is_refused_at_its_block():
    config = {
        **BASE,
        "quantization_config": {"quant_method": "modelopt", "kv_cache_quant_algo": "INT4"},
    }
    message = _one_refusal(config, "KV305", "quantization_config")
    assert 'kv_cache_quant_algo "INT4" is not FP8 or NVFP4' in message


# --------------------------------------------------------------------------- rope scaling


def _notes(config: dict) -> list[str]:
    result = import_config("config.json", json.dumps(config, indent=2))
    assert result.diagnostics == [] and result.text is not None
    return [d.render() for d in result.notes]


def test_rope_scaling_names_the_context_it_reaches_and_how_to_plan_it():
    # Qwen2.5's YaRN block: factor 4 x original_max_position_embeddings 32768 = 131072
    # tokens, past the native 32768 the spec keeps
    config = {
        **BASE,
        "max_position_embeddings": 32768,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    }
    (note,) = _notes(config)
    assert "'yarn' scaling by 4.0 to 131072 tokens; the spec keeps the native" in note
    assert "--max-seq-len 131072 --rope-scaled" in note
    # Llama 3.1's llama3 block: 8 x 8192 = 65536 is inside the native 131072: nothing past it
    llama = {
        **BASE,
        "max_position_embeddings": 131072,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "original_max_position_embeddings": 8192,
        },
    }
    (note,) = _notes(llama)
    assert "tokens" not in note.split("(fix:")[0]


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"


@pytest.mark.parametrize(
    ("fixture", "native", "scaling"),
    [
        # Gemma-3-27B: linear x8 and max_position_embeddings 131072, already the scaled
        # length (vLLM 0.33 vllm/config/model.py _get_and_verify_max_len: "Gemma3's
        # max_model_len (128K) is already scaled by RoPE scaling, so we skip applying the
        # scaling factor again"); c2a37ec suggested --max-seq-len 1048576 (131072 x 8).
        ("gemma-3-27b.json", 131072, "'linear' scaling by 8.0"),
        ("gemma-3-27b-text.json", 131072, "'linear' scaling by 8.0"),
        # Llama-3.2-1B: llama3 x32 from original_max_position_embeddings 8192; 131072 is past
        # the original, so already scaled (vLLM never multiplies a llama3 block); c2a37ec
        # suggested 8192 x 32 = 262144.
        ("llama-3.2-1b.json", 131072, "'llama3' scaling by 32.0"),
        # Llama-3.1-8B: llama3 x8 from 8192: 131072 is past the original.
        ("llama-3.1-8b.json", 131072, "'llama3' scaling by 8.0"),
        # DeepSeek-V3: yarn x40 from 4096 = 163840, its max_position_embeddings exactly.
        ("deepseek-v3.json", 163840, "'yarn' scaling by 40"),
    ],
)
def test_an_already_scaled_max_position_embeddings_is_said_and_no_longer_plan_suggested(
    fixture, native, scaling
):
    config = json.loads((FIXTURES / fixture).read_text())
    (note,) = [n for n in _notes(config) if "scaling" in n]
    message, _, fix = note.partition(" (fix: ")
    assert f"rope_scaling: {scaling}" in message
    assert f"max_position_embeddings {native} is already the scaled context" in message
    assert "--rope-scaled" not in note and "--max-seq-len" not in note
    assert f"plan up to {native} tokens as it is" in fix


def test_a_linear_block_on_another_model_reaches_max_position_embeddings_times_factor():
    # vLLM 0.33 multiplies max_position_embeddings by a linear block's factor (any model type
    # but gemma3): 4096 x 2 = 8192 is the context a deployment may plan.
    config = {
        **BASE,
        "max_position_embeddings": 4096,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
    }
    (note,) = _notes(config)
    assert "'linear' scaling by 2.0 to 8192 tokens; the spec keeps the native" in note
    assert "--max-seq-len 8192 --rope-scaled" in note


def test_longcat_flash_caches_two_attention_sublayers_per_layer():
    # LongcatFlashDecoderLayer: self_attn is two MLA sublayers (layer_idx * 2 + i), so
    # LongcatFlashConfig.num_hidden_layers = 2 x num_layers 28 = 56 caches (vLLM likewise);
    # a config giving num_hidden_layers 56 instead sets num_layers 56 // 2 = 28
    config = {**DEEPSEEK, "model_type": "longcat_flash", "num_layers": 28}
    del config["num_hidden_layers"]
    model = _model(config)
    assert model.layers.count == 56
    assert {(k.kv_lora_rank, k.qk_rope_head_dim) for k in layer_kinds(model)} == {(512, 64)}
    given = {**DEEPSEEK, "model_type": "longcat_flash", "num_hidden_layers": 56}
    assert _model(given).layers.count == 56
