"""import-hf of the refused architectures of the transformers corpus whose cache the spec can
say (issue 22): Kimi Linear's Kimi Delta Attention as a Gated-DeltaNet-form ``mamba:`` state
beside MLA layers, LFM2 configs without short-convolution layers; and the parallel hybrids
whose state is not Mamba-2's (ZAYA, Inkling) refused with that state named.

Every expected shape is derived by hand from the transformers 5.24.0 config class and
vLLM 0.33.0's ``MambaStateShapeCalculator.kda_state_shape`` (docs/cost-model.md §8: a
recurrent state is a conv window of ``conv_dim x (d_conv - 1)`` in the cache dtype and an SSM
state of ``num_heads x head_dim x d_state`` in its own dtype), written next to each test."""

from __future__ import annotations

import json

from kvgen._importhf import import_config
from kvgen._model.quant import element_bytes
from kvgen._model.recurrent import recurrent_state
from kvgen._spec.loader import load_bytes

from tests.cli.test_import_hf_reviewed import _at, _import, _model, _one_refusal
from tests.generated.test_families import layer_kinds
from tests.workloads import ROOT

KIMI_FIXTURE = ROOT / "tests" / "fixtures" / "hf" / "kimi-linear-48b-a3b-instruct.json"
KIMI = {  # KimiLinearConfig as transformers saves it (flat fields, layer_types)
    "model_type": "kimi_linear",
    "num_hidden_layers": 4,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "hidden_size": 2304,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "linear_num_heads": 16,
    "linear_head_dim": 64,
    "linear_conv_kernel_dim": 3,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "model_max_length": 1048576,
    "torch_dtype": "bfloat16",
}


def _kda_dims(kind) -> tuple:
    m = kind.mamba
    return (m.num_heads, m.head_dim, m.d_state, m.n_groups, m.d_conv, m.ssm_dtype)


# --------------------------------------------------------------------------- Kimi Linear


def test_kimi_linear_checkpoint_imports_kda_and_mla_layers():
    # The checkpoint's form: linear_attn_config {num_heads 32, head_dim 128,
    # short_conv_kernel_size 4} and full_attn_layers [4, 8, 12, 16, 20, 24, 27] (1-indexed):
    # MLA at 0-indexed 3, 7, 11, 15, 19, 23, 26, KDA on the other 20 layers.
    result = import_config("config.json", KIMI_FIXTURE.read_text(encoding="utf-8"))
    assert result.diagnostics == [], [d.render() for d in result.diagnostics]
    assert result.text is not None
    model = load_bytes("kimi.yaml", result.text.encode()).family.models[0]  # type: ignore[union-attr]
    kinds = layer_kinds(model)
    mla_at = [i for i, k in enumerate(kinds) if k.attention == "full"]
    assert mla_at == [3, 7, 11, 15, 19, 23, 26]
    assert all(kinds[i].kv_lora_rank == 512 and kinds[i].qk_rope_head_dim == 64 for i in mla_at)
    kda = [k for k in kinds if k.attention == "recurrent"]
    assert len(kda) == 20
    # KDA as GDN: num_heads = n_groups = 32 heads, head_dim = d_state = 128, kernel 4, the
    # recurrent state fp32 (vLLM kda_state_dtype "auto"; SGLang's default)
    assert {_kda_dims(k) for k in kda} == {(32, 128, 128, 32, 4, "fp32")}
    # conv (4 - 1) x (32 x 128 + 2 x 32 x 128) = 36,864 bf16 elements = 73,728 B; recurrent
    # 32 x 128 x 128 x 4 B = 2,097,152 B: 2,170,880 B per request per layer (vLLM's
    # kda_state_shape: conv (12,288, 3), recurrent (32, 128, 128))
    state = recurrent_state(kda[0].mamba, "bf16", 1)
    assert (state.conv, state.ssm) == (73_728, 2_097_152)
    assert model.max_seq_len == 1_048_576  # model_max_length (KimiLinearConfig attribute_map)
    assert "2170880 B per request" in result.text


def test_kimi_linear_flat_fields_as_transformers_saves_them():
    # linear_num_heads 16, linear_head_dim 64, linear_conv_kernel_dim 3; layer_types names
    # the last layer full_attention (MLA)
    kinds = layer_kinds(_model(KIMI))
    assert [k.attention for k in kinds] == ["recurrent"] * 3 + ["full"]
    assert _kda_dims(kinds[0]) == (16, 64, 64, 16, 3, "fp32")
    # conv (3 - 1) x 3 x 16 x 64 = 6,144 bf16 elements = 12,288 B; 16 x 64 x 64 x 4 = 262,144 B
    state = recurrent_state(kinds[0].mamba, "bf16", 1)
    assert (state.conv, state.ssm) == (12_288, 262_144)
    assert kinds[3].kv_lora_rank + kinds[3].qk_rope_head_dim == 576
    assert element_bytes("bf16", 576) == 1_152  # bytes per token of the MLA layer


def test_linear_attn_config_wins_over_the_flat_fields():
    # KimiLinearConfig.__post_init__ reads linear_attn_config's head_dim / num_heads /
    # short_conv_kernel_size over the flat fields
    config = {**KIMI, "linear_attn_config": {"num_heads": 8, "head_dim": 32}}
    kinds = layer_kinds(_model(config))
    assert _kda_dims(kinds[0]) == (8, 32, 32, 8, 3, "fp32")  # the kernel from the flat field


def test_kimi_linear_default_places_mla_at_every_fourth_layer_from_four():
    # neither layer_types nor kda_layers: KimiLinearConfig's default, full attention where
    # i and i % 4 == 0 (0-indexed): layers 4 and 8 of 9
    config = {k: v for k, v in KIMI.items() if k != "layer_types"}
    config["num_hidden_layers"] = 9
    kinds = layer_kinds(_model(config))
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [4, 8]


def test_kimi_linear_layer_lists_must_name_each_layer_once():
    config = {k: v for k, v in KIMI.items() if k != "layer_types"}
    config["linear_attn_config"] = {"kda_layers": [1, 2, 3], "full_attn_layers": [3, 4]}
    text, diagnostics = _import(config)
    assert text is None and len(diagnostics) == 1
    assert "KV303" in diagnostics[0] and "name each of the 4 layers once" in diagnostics[0]
    # positioned at the nested key
    lines = json.dumps(config, indent=2).splitlines()
    row = next(i for i, line in enumerate(lines, 1) if '"kda_layers"' in line)
    assert diagnostics[0].startswith(f"config.json:{row}:5: ")


def test_a_kda_head_count_outside_the_spec_bounds_is_refused_at_its_field():
    config = {**KIMI, "linear_num_heads": 0}
    message = _one_refusal(config, "KV307", "linear_num_heads")
    assert "'linear_num_heads' must be an integer in [1, 4096], found 0" in message
    # in linear_attn_config: at its nested key
    config = {**KIMI, "linear_attn_config": {"head_dim": "128"}}
    text, diagnostics = _import(config)
    lines = json.dumps(config, indent=2).splitlines()
    row = next(i for i, line in enumerate(lines, 1) if '"head_dim": "128"' in line)
    assert text is None and len(diagnostics) == 1
    assert diagnostics[0].startswith(f"config.json:{row}:5: KV307 "), diagnostics[0]
    assert "'linear_attn_config.head_dim' must be an integer in [1, 65536]" in diagnostics[0]


def _mla_with(layer_types: list[str], **more) -> dict:
    config = {**KIMI, "model_type": "deepseek_v3", "sliding_window": 4096, **more}
    config["layer_types"] = layer_types
    del config["linear_num_heads"], config["linear_head_dim"], config["linear_conv_kernel_dim"]
    config["max_position_embeddings"] = config.pop("model_max_length")
    return config


def test_mla_beside_sliding_layers_imports_the_window_on_the_latent():
    # A sliding layer of an MLA model keeps the latent and RoPE key of its last 4,096 tokens
    # (transformers Dots3NoteAttention: DynamicSlidingWindowLayer of kv_lora_rank + rope):
    # the spec's sliding kind with kv_lora_rank (docs/cost-model.md §1); no engine row models
    # it (NotModelled), kvgen's own pools do.
    kinds = layer_kinds(_model(_mla_with(["sliding_attention", "full_attention"] * 2)))
    assert [(k.attention, k.window, k.kv_lora_rank, k.qk_rope_head_dim) for k in kinds] == [
        ("sliding", 4096, 512, 64),
        ("full", None, 512, 64),
    ] * 2


def test_mla_beside_chunked_layers_is_still_refused():
    config = _mla_with(["chunked_attention", "full_attention"] * 2, attention_chunk_size=8192)
    message = _one_refusal(config, "KV305", "kv_lora_rank")
    assert "MLA with chunked layers is not supported" in message


def test_dots3_note_sliding_layers_take_their_own_latent_from_per_layer_config():
    # Dots3NoteConfig: indexed_attention layers (MLA 512 + 64 and an indexer key of 128) and
    # sliding_attention layers whose per_layer_config sets kv_lora_rank 1024 (window 512):
    # per token (512 + 64) x 2 B = 1,152 B and (1,024 + 64) x 2 B = 2,176 B in bf16.
    config = {
        "model_type": "dots3_note_text",
        "num_hidden_layers": 4,
        "layer_types": ["indexed_attention"] * 2 + ["sliding_attention"] * 2,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "hidden_size": 4096,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "index_head_dim": 128,
        "sliding_window": 512,
        "per_layer_config": {str(i): {"kv_lora_rank": 1024, "qk_nope_head_dim": 192}
                             for i in (2, 3)},
        "max_position_embeddings": 524288,
        "torch_dtype": "bfloat16",
    }  # fmt: skip
    kinds = layer_kinds(_model(config))
    got = [(k.attention, k.window, k.kv_lora_rank, k.index_head_dim) for k in kinds]
    assert got == [("full", None, 512, 128)] * 2 + [("sliding", 512, 1024, None)] * 2
    assert [(k.kv_lora_rank + k.qk_rope_head_dim) * 2 for k in kinds] == [1152] * 2 + [2176] * 2
    # the corpus: transformers measured exactly these latents (fp32) and its window of 512
    from tests.cli.hf_corpus import load_corpus, verdict

    for name in ("dots3_note", "dots3_note_text"):
        entry = next(e for e in load_corpus()["entries"] if e["model_type"] == name)
        kv = [(la["k_per_token"], la["v_per_token"], la.get("window")) for la in entry["layers"]]
        assert kv == [(512, 64, None)] * 2 + [(1024, 64, 512)] * 2
        assert verdict(entry).verdict == "match"


def test_a_per_layer_latent_size_without_mla_is_still_refused():
    config = {**_mla_with(["full_attention"] * 4), "per_layer_config": {"1": {"kv_lora_rank": 9}}}
    del config["kv_lora_rank"]
    config["head_dim"] = 128
    text, diagnostics = _import(config)
    assert text is None and "per_layer_config" in diagnostics[0]


# --------------------------------------------------------------------------- LFM2

LFM2 = {
    "model_type": "lfm2",
    "num_hidden_layers": 4,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_size": 2560,
    "conv_L_cache": 3,
    "block_multiple_of": 256,
    "block_auto_adjust_ff_dim": True,
    "max_position_embeddings": 128000,
    "torch_dtype": "bfloat16",
}


def test_lfm2_without_conv_layers_is_a_plain_attention_cache():
    # Lfm2Config: neither layer_types nor full_attn_idxs -> every layer full_attention (what
    # the corpus's default config is); head_dim 2560 / 32 = 80, 8 KV heads. conv_L_cache and
    # the block_* feed-forward sizing do not move that cache.
    for config in (LFM2, {**LFM2, "full_attn_idxs": [0, 1, 2, 3]}):
        kinds = layer_kinds(_model(config))
        assert [(k.attention, k.kv_heads, k.head_dim) for k in kinds] == [("full", 8, 80)] * 4


def test_lfm2_conv_layers_are_refused_naming_the_short_convolution():
    config = {**LFM2, "layer_types": ["conv", "full_attention", "conv", "full_attention"]}
    message = _one_refusal(config, "KV305", "layer_types")
    assert "short-convolution layer holding a conv state" in message
    # no layer_types: Lfm2Config makes the layers outside full_attn_idxs conv layers
    message = _one_refusal({**LFM2, "full_attn_idxs": [1, 3]}, "KV305", "full_attn_idxs")
    assert "short-convolution layers holding a conv state" in message


def test_lfm2_moe_without_layer_types_is_refused_at_its_model_type():
    # Lfm2MoeConfig has no default for layer_types (its model cannot be built without one)
    config = {**LFM2, "model_type": "lfm2_moe"}
    message = _one_refusal(config, "KV305", "model_type")
    assert "without layer_types" in message


# --------------------------------------------------------------------------- parallel states


def test_zaya_refusal_names_its_convolutional_attention_state():
    # ZayaCCAProjection: each "hybrid" layer keeps a conv window over q and k and the previous
    # token's delayed V projection beside its KV cache: not a Mamba-2 state
    config = {**LFM2, "model_type": "zaya", "layer_types": ["hybrid"] * 4}
    message = _one_refusal(config, "KV305", "layer_types")
    assert "Compressed Convolutional Attention" in message and "not Mamba-2's" in message


def test_inkling_refusal_names_its_short_convolution_states():
    # InklingDecoderLayer: four InklingShortConvolution states per layer (K, V and twice the
    # hidden states), no SSM state, beside a sliding-window (or full) KV cache
    layer_types = ["hybrid_sliding", "hybrid_sliding", "hybrid_sliding", "hybrid"]
    config = {**LFM2, "model_type": "inkling_text", "layer_types": layer_types}
    for name in ("conv_L_cache", "block_multiple_of", "block_auto_adjust_ff_dim"):
        del config[name]
    text, diagnostics = _import(config)
    assert text is None and len(diagnostics) == 1
    assert diagnostics[0].startswith(f"{_at(config, 'layer_types')}: KV305 ")
    assert "sliding-window KV cache and four short-convolution states" in diagnostics[0]


# --------------------------------------------------------------------------- Ling V3

LING_V3 = {  # BailingHybridConfig as a checkpoint would publish it: no derived linear_* fields
    "model_type": "bailing_hybrid",
    "num_hidden_layers": 12,
    "layer_group_size": 6,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "head_dim": 64,
    "hidden_size": 1024,
    "short_conv_kernel_size": 4,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "model_max_length": 131072,
    "torch_dtype": "bfloat16",
}


def test_ling_v3_kda_layers_import_as_kimi_delta_attention():
    # transformers 5.24.0 BailingHybridDeltaAttention is Kimi Linear's KDA layer; its config's
    # __post_init__ sets linear_num_heads = num_attention_heads (16), linear_head_dim =
    # head_dim (64), linear_conv_kernel_dim = short_conv_kernel_size (4), and layer_types
    # full_attention (MLA) at every layer_group_size-th layer (1-indexed): 0-indexed 5, 11.
    model = _model(LING_V3)
    kinds = layer_kinds(model)
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [5, 11]
    assert all(kinds[i].kv_lora_rank == 512 for i in (5, 11))
    kda = [k for k in kinds if k.attention == "recurrent"]
    assert len(kda) == 10 and {_kda_dims(k) for k in kda} == {(16, 64, 64, 16, 4, "fp32")}
    # conv (4 - 1) x 3 x 16 x 64 = 9,216 bf16 elements = 18,432 B; recurrent 16 x 64 x 64 x
    # 4 B = 262,144 B per request per layer
    state = recurrent_state(kda[0].mamba, "bf16", 1)
    assert (state.conv, state.ssm) == (18_432, 262_144)


def test_ling_v3_as_transformers_saves_it_matches_the_corpus():
    # The corpus entry: BailingHybridConfig() shrunk to 6 layers and saved (linear_num_heads
    # 32, linear_head_dim 128, linear_conv_kernel_dim 4 and layer_types written out; its
    # head_dim field then holds qk_rope_head_dim 64, which the saved linear_head_dim
    # overrides). transformers measured 2,293,760 B per KDA layer: conv 4 columns x 3 x 32 x
    # 128 x 4 B = 196,608 B (it keeps d_conv columns, the engines d_conv - 1) + recurrent
    # 32 x 128 x 128 x 4 B = 2,097,152 B; and MLA 512 + 64 elements per token.
    from tests.cli.hf_corpus import load_corpus, verdict

    entry = next(e for e in load_corpus()["entries"] if e["model_type"] == "bailing_hybrid")
    assert [layer.get("state_bytes") for layer in entry["layers"][:5]] == [2_293_760] * 5
    model = _model({**json.loads(entry["config"]), "torch_dtype": "float32"})
    kinds = layer_kinds(model)
    assert {_kda_dims(k) for k in kinds[:5]} == {(32, 128, 128, 32, 4, "fp32")}
    state = recurrent_state(kinds[0].mamba, "fp32", 1)
    assert state.conv + 3 * 32 * 128 * 4 + state.ssm == 2_293_760
    assert verdict(entry).verdict == "match"


def test_ling_2_5_without_a_short_conv_stays_lightning():
    # No short_conv_kernel_size: a Ling 2.5 checkpoint (BailingMoeV2_5ForCausalLM), whose
    # linear layers are lightning attention (one head_dim x head_dim matrix per head, no conv)
    config = {k: v for k, v in LING_V3.items() if k != "short_conv_kernel_size"}
    kinds = layer_kinds(_model(config))
    assert {k.attention for k in kinds} == {"recurrent", "full"}
    assert all(k.mamba is None and k.linear is not None for k in kinds if k.attention != "full")
