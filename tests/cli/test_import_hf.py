"""``kvgen import-hf``: config.json fixtures written from the published numbers (no downloads),
imported and checked against hand-derived bytes (docs/cost-model.md §1, §3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kvgen._cli.main import main
from kvgen._importhf import compact_pattern, import_config
from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes, load_path
from kvgen._spec.models import Family

from tests.generated.test_families import (
    bytes_per_token,
    fixed_bytes_per_request,
    full_slope,
    layer_kinds,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"


def run_import(path: Path, *args: str) -> tuple[str | None, list[str]]:
    """Import a fixture through the library; (spec text, rendered diagnostics)."""
    display = path.relative_to(ROOT).as_posix()
    result = import_config(display, path.read_text(encoding="utf-8"), **_options(args))
    return result.text, [d.render() for d in result.diagnostics]


def _options(args: tuple[str, ...]) -> dict:
    options: dict = {}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        options[flag.lstrip("-").replace("-", "_")] = value
    if "tokens_per_block" in options:
        options["tokens_per_block"] = int(options["tokens_per_block"])
    return options


def imported(name: str, *args: str) -> Family:
    text, diagnostics = run_import(FIXTURES / f"{name}.json", *args)
    assert diagnostics == []
    assert text is not None
    loaded = load_bytes(f"{name}.yaml", text.encode())
    assert loaded.diagnostics == []
    assert [d.render() for d in lint_loaded(loaded)] == []
    assert loaded.family is not None
    return loaded.family


# --------------------------------------------------------------------------- published shapes


def test_llama_3_1_8b():
    family = imported("llama-3.1-8b")
    (model,) = family.models
    assert (family.family, model.name, model.max_seq_len) == ("llama", "llama_3_1_8b", 131072)
    assert family.kv_cache_dtype == "bf16"
    # 32 layers * 2 (K, V) * 8 KV heads * 128 head_dim (4096 / 32) * 2 bytes = 131,072 B/token
    assert full_slope(model) == 131072
    assert fixed_bytes_per_request(model, tpb=family.tokens_per_block) == 0


def test_llama_3_2_11b_vision_cross_attention():
    family = imported("llama-3.2-11b-vision")
    (model,) = family.models
    assert model.layers.pattern == ["full", "full", "full", "cross", "full"]
    assert model.layer_kinds["cross"].encoder_tokens == 6404  # 4 tiles x (40^2 + 1)
    # 32 self-attention layers * 2 * 8 heads * 128 * 2 bytes = 131,072 B/token; the 8 cross
    # layers hold ceil(6404 / 32) = 201 pages of 32 tokens * 4,096 B each per request.
    assert full_slope(model) == 131072
    assert fixed_bytes_per_request(model, tpb=family.tokens_per_block) == 8 * 201 * 32 * 4096


def test_cross_attention_without_the_vision_dimensions():
    config = json.loads((FIXTURES / "llama-3.2-11b-vision.json").read_text())
    del config["vision_config"]["patch_size"]
    (diagnostic,) = _import_text(config)
    # Reported at the vision_config key of the text _import_text passes (indent 2).
    lines = json.dumps(config, indent=2).splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.startswith('  "vision_config"'))
    assert diagnostic == (
        f"config.json:{line}:3: KV310 cross_attention_layers need the encoder token count: "
        "vision_config lacks patch_size (fix: give vision_config image_size, patch_size and "
        "max_num_tiles as published)"
    )


def test_cross_attention_layers_past_the_layer_count():
    config = json.loads((FIXTURES / "llama-3.2-11b-vision.json").read_text())
    config["text_config"]["cross_attention_layers"] = [3, 40]
    (diagnostic,) = _import_text(config)
    assert "KV303 'text_config.cross_attention_layers' must list distinct layers in [0, 40)" in (
        diagnostic
    )


def test_cross_attention_layers_not_a_list():
    config = json.loads((FIXTURES / "llama-3.2-11b-vision.json").read_text())
    config["text_config"]["cross_attention_layers"] = "3,8"
    (diagnostic,) = _import_text(config)
    assert "KV307 'text_config.cross_attention_layers' must list layer indices" in diagnostic


def test_mistral_7b_uniform_window():
    family = imported("mistral-7b")
    (model,) = family.models
    assert model.layers.pattern == ["sliding"]
    assert model.layer_kinds["sliding"].window == 4096
    # all 32 layers slide: nothing grows with history
    assert full_slope(model) == 0
    # b = 2 * 8 * 128 * 2 = 4,096 B; tpb 32 (import default), H=1:
    # pages = ceil((4096 + 1 - 2) / 32) + 1 = 128 + 1 = 129 -> 32 * 4,096 * 32 * 129
    assert family.tokens_per_block == 32
    assert fixed_bytes_per_request(model, tpb=32) == 541065216


def test_gemma_3_27b_nested_text_config():
    family = imported("gemma-3-27b")
    (model,) = family.models
    assert family.family == "gemma3"
    assert model.layers.count == 62
    assert model.layers.pattern == ["sliding"] * 5 + ["full"]
    # 62 * 2 * 16 KV heads * 128 * 2 B = 507,904 B per token over all layers
    assert bytes_per_token(model) == 507904
    # every 6th layer global: 10 globals -> slope 10 * 8,192 = 81,920
    assert full_slope(model) == 81920
    # 52 local layers, window 1024, tpb 32: pages(1024, 1) = ceil(1023/32) + 1 = 33
    assert fixed_bytes_per_request(model, tpb=32) == 52 * 8192 * 32 * 33
    # EAGLE3 K=4 (H = 8): pages = ceil(1030/32) + 1 = 34, the boundary page included
    assert fixed_bytes_per_request(model, tpb=32, headroom=8) == 52 * 8192 * 32 * 34


def test_qwen2_max_window_layers():
    family = imported("qwen2-swa")
    (model,) = family.models
    kinds = [k.attention for k in layer_kinds(model)]
    # Qwen2 semantics: layers >= max_window_layers (21) use the window when use_sliding_window
    assert kinds == ["full"] * 21 + ["sliding"] * 7
    # b = 2 * 4 KV heads * 128 (3584 / 28) * 2 = 2,048 B; 21 full layers -> 43,008 B per token
    assert full_slope(model) == 43008
    # 7 sliding layers * 2,048 * 32 * pages(4096, 1) = ceil(4095/32) + 1 = 129
    assert fixed_bytes_per_request(model, tpb=32) == 7 * 2048 * 32 * 129


def test_deepseek_v3_mla_and_mtp():
    family = imported("deepseek-v3")
    (model,) = family.models
    # (kv_lora_rank 512 + qk_rope_head_dim 64) * 2 B * 61 layers = 70,272 B per token
    assert full_slope(model) == 70272
    profile = family.profile("mtp")
    assert profile is not None and profile.mode == "mtp" and profile.max_draft_len == 1
    assert profile.extra_layers is not None
    # num_nextn_predict_layers 1: one MTP layer of the same MLA shape, 1,152 B per token
    assert bytes_per_token(profile.extra_layers) == 1152


def test_gpt_oss_20b_layer_types():
    family = imported("gpt-oss-20b")
    (model,) = family.models
    assert model.layers.pattern == ["sliding", "full"]
    # 12 full layers * 2 * 8 * 64 * 2 B = 24,576 B per token
    assert full_slope(model) == 24576
    # 12 sliding layers * 2,048 B * 32 * pages(128, 1) = ceil(127/32) + 1 = 5
    assert fixed_bytes_per_request(model, tpb=32) == 12 * 2048 * 32 * 5


def test_gpt_oss_20b_with_tokens_per_block_64():
    family = imported("gpt-oss-20b", "--tokens-per-block", "64")
    assert family.tokens_per_block == 64
    # pages(128, 1) at tpb 64 = ceil(127/64) + 1 = 3
    assert fixed_bytes_per_request(family.models[0], tpb=64) == 12 * 2048 * 64 * 3


def test_openelm_per_layer_kv_heads():
    family = imported("openelm-270m", "--kv-cache-dtype", "bf16")
    (model,) = family.models
    assert model.max_seq_len == 2048
    assert [k.kv_heads for k in layer_kinds(model)] == [3] * 5 + [4] * 7 + [5] * 4
    # 63 heads * 2 * 64 * 2 B = 16,128 B per token
    assert full_slope(model) == 16128


def test_openelm_float32_config_needs_no_override():
    family = imported("openelm-270m")
    assert family.kv_cache_dtype == "fp32"


def test_nemotron_h_hybrid_override_pattern():
    family = imported("nemotron-h-8b")
    (model,) = family.models
    # 24 M + 4 * + 24 - = 52 blocks (num_hidden_layers); the 24 MLP blocks hold no cache but
    # keep their index ("attention: none"), so "*" stays at characters 7, 18, 29 and 40.
    assert model.layers.count == 52
    kinds = layer_kinds(model)
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [7, 18, 29, 40]
    mlp = [
        i for i, c in enumerate("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-") if c == "-"
    ]
    assert len(mlp) == 24
    assert [i for i, k in enumerate(kinds) if k.attention == "none"] == mlp
    assert model.layer_kinds["ffn"].model_fields_set == {"attention"}
    # Mamba-2 by its dimensions (docs/cost-model.md §8): conv (4 - 1) * (128 * 64 + 2 * 8 *
    # 128) = 30,720 + ssm 128 * 64 * 128 = 1,048,576 elements, * 2 B = 2,158,592 B per layer
    state = model.layer_kinds["mamba"].mamba
    assert state is not None and model.layer_kinds["mamba"].state_bytes is None
    assert (state.num_heads, state.head_dim, state.d_state, state.n_groups, state.d_conv) == (
        128, 64, 128, 8, 4,
    )  # fmt: skip
    assert fixed_bytes_per_request(model, tpb=32) == 24 * 2158592
    assert full_slope(model) == 4 * 2 * 8 * 128 * 2


def test_qwen3_next_full_attention_interval():
    family = imported("qwen3-next-80b-a3b")
    (model,) = family.models
    assert model.layers.pattern == ["linear", "linear", "linear", "full"]
    # Gated DeltaNet in Mamba-2 dimensions: value heads 32 of 128, key heads 16 as groups, key
    # head dim 128 as d_state; conv (4 - 1) * (2 * 16 * 128 + 32 * 128) = 24,576 + state
    # 32 * 128 * 128 = 524,288 elements
    state = model.layer_kinds["linear"].mamba
    assert state is not None
    assert (state.num_heads, state.head_dim, state.d_state, state.n_groups, state.d_conv) == (
        32, 128, 128, 16, 4,
    )  # fmt: skip
    assert fixed_bytes_per_request(model, tpb=64) == 36 * (24576 + 524288) * 2
    assert full_slope(model) == 12 * 2 * 2 * 256 * 2


def test_kv_cache_dtype_override():
    family = imported("llama-3.1-8b", "--kv-cache-dtype", "fp8")
    assert family.kv_cache_dtype == "fp8"
    # 32 * 2 * 8 * 128 * 1 byte
    assert full_slope(family.models[0], dtype="fp8") == 65536


def test_family_and_model_names_can_be_given():
    family = imported("llama-3.1-8b", "--family", "meta", "--model", "l8")
    assert (family.family, family.models[0].name) == ("meta", "l8")


def test_every_number_names_the_config_field():
    text, _ = run_import(FIXTURES / "gemma-3-27b.json")
    assert text is not None
    assert "tests/fixtures/hf/gemma-3-27b.json" in text.splitlines()[1]
    for line in text.splitlines():
        value = line.split("#")[0].split(":")[-1].strip()
        if value.isdigit() and not line.startswith("schema_version"):
            assert "# " in line, line


# --------------------------------------------------------------------------- diagnostics


def test_contradictory_fields_are_reported_at_the_key():
    text, diagnostics = run_import(FIXTURES / "contradictory.json")
    assert text is None
    assert diagnostics == [
        "tests/fixtures/hf/contradictory.json:6:3: KV303 'layer_types' disagrees with "
        "sliding_window_pattern 6 (every 6th layer global) (fix: remove the stale field, "
        "or fix the list)"
    ]


def test_unknown_field_is_reported_not_guessed():
    text, diagnostics = run_import(FIXTURES / "unknown-field.json")
    assert text is None
    assert len(diagnostics) == 1
    assert diagnostics[0].startswith(
        "tests/fixtures/hf/unknown-field.json:9:3: KV302 unknown config field "
        "'kv_compression_ratio'"
    )


def test_a_reviewed_unknown_field_can_be_ignored():
    path = FIXTURES / "unknown-field.json"
    result = import_config(
        path.as_posix(), path.read_text(), ignore_fields=["kv_compression_ratio"]
    )
    assert result.diagnostics == []
    assert result.text is not None


def _import_text(config: dict | str) -> list[str]:
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    result = import_config("config.json", text)
    assert result.text is None
    return [d.render() for d in result.diagnostics]


LLAMA = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())


def test_invalid_json_reports_line_and_column():
    (diagnostic,) = _import_text('{\n  "num_hidden_layers": 32,\n}')
    assert diagnostic.startswith("config.json:3:1: KV301 invalid JSON")


def test_top_level_must_be_an_object():
    (diagnostic,) = _import_text("[1, 2]")
    assert "KV301" in diagnostic


def test_duplicate_json_key():
    text = json.dumps(LLAMA, indent=2).replace(
        '"num_hidden_layers": 32,', '"num_hidden_layers": 32,\n  "num_hidden_layers": 30,'
    )
    (diagnostic,) = _import_text(text)
    assert "KV306 duplicate key 'num_hidden_layers'" in diagnostic


def test_layer_types_of_the_wrong_length():
    config = dict(LLAMA, layer_types=["full_attention"] * 30, sliding_window=None)
    (diagnostic,) = _import_text(config)
    assert "KV303 'layer_types' has 30 entries for 32 layers" in diagnostic


def test_missing_layer_count():
    config = {k: v for k, v in LLAMA.items() if k != "num_hidden_layers"}
    (diagnostic,) = _import_text(config)
    assert "KV304 config has no 'num_hidden_layers'" in diagnostic


def test_missing_dtype_asks_for_the_flag():
    config = {k: v for k, v in LLAMA.items() if k != "torch_dtype"}
    (diagnostic,) = _import_text(config)
    assert "KV304" in diagnostic and "--kv-cache-dtype" in diagnostic


def test_kv_heads_that_do_not_divide_query_heads():
    (diagnostic,) = _import_text(dict(LLAMA, num_key_value_heads=5))
    assert "KV303" in diagnostic and "5 KV heads do not divide 32 query heads" in diagnostic


def test_sliding_layers_without_a_window():
    types = ["sliding_attention", "full_attention"] * 16
    (diagnostic,) = _import_text(dict(LLAMA, layer_types=types))
    assert "KV303" in diagnostic and "sliding_window is null" in diagnostic


def test_use_sliding_window_false_contradicts_sliding_layer_types():
    types = ["sliding_attention", "full_attention"] * 16
    config = dict(LLAMA, layer_types=types, sliding_window=4096, use_sliding_window=False)
    (diagnostic,) = _import_text(config)
    assert "KV303" in diagnostic and "use_sliding_window is false" in diagnostic


def test_text_config_disagreeing_with_top_level():
    config = json.loads((FIXTURES / "gemma-3-27b.json").read_text())
    config["num_hidden_layers"] = 60
    (diagnostic,) = _import_text(config)
    assert "KV303 'num_hidden_layers' is 60 at the top level but 62 in text_config" in diagnostic


def test_unknown_layer_type():
    config = dict(LLAMA, layer_types=["diagonal_attention"] * 32)
    (diagnostic,) = _import_text(config)
    assert "KV305 layer type 'diagonal_attention'" in diagnostic


def test_llama_4_scout_chunked_layers_from_the_default_interval():
    # no_rope_layers [] -> transformers' default: every 4th layer NoPE (full), the rest RoPE
    # layers attending within attention_chunk_size 8192 (chunked).
    family = imported("llama-4-scout-17b-16e")
    (model,) = family.models
    assert model.max_seq_len == 10485760
    assert model.layers.count == 48
    assert model.layers.pattern == ["chunked", "chunked", "chunked", "full"]
    chunked, full = model.layer_kinds["chunked"], model.layer_kinds["full"]
    assert (chunked.attention, chunked.chunk, chunked.kv_heads, chunked.head_dim) == (
        "chunked",
        8192,
        8,
        128,
    )
    assert (full.attention, full.chunk, full.kv_heads, full.head_dim) == ("full", None, 8, 128)


def test_no_rope_layers_and_interval_place_the_chunked_layers():
    base = json.loads((FIXTURES / "llama-4-maverick-17b-128e.json").read_text())
    text = base["text_config"]
    flags = [1, 0] * 24  # an explicit list: 1 RoPE (chunked), 0 NoPE (full)
    for extra, pattern in (
        ({"no_rope_layers": flags}, ["chunked", "full"]),
        ({"no_rope_layer_interval": 3}, ["chunked", "chunked", "full"]),
        ({"layer_types": ["chunked_attention", "full_attention"] * 24}, ["chunked", "full"]),
    ):
        config = dict(base, text_config=dict(text, **extra))
        result = import_config("config.json", json.dumps(config))
        assert result.diagnostics == []
        assert result.text is not None
        loaded = load_bytes("x.yaml", result.text.encode())
        assert loaded.family is not None
        assert loaded.family.models[0].layers.pattern == pattern, extra


def test_chunk_reaching_the_context_is_full_attention():
    base = json.loads((FIXTURES / "llama-4-maverick-17b-128e.json").read_text())
    text = dict(base["text_config"], max_position_embeddings=8192)
    result = import_config("config.json", json.dumps(dict(base, text_config=text)))
    assert result.text is not None
    # both fields are the composite's text_config's, and the comment says so (issue 32)
    assert (
        "text_config.attention_chunk_size 8192 >= text_config.max_position_embeddings 8192"
        in result.text
    )
    loaded = load_bytes("x.yaml", result.text.encode())
    assert loaded.family is not None
    assert loaded.family.models[0].layers.pattern == ["full"]


def test_malformed_no_rope_layers_is_reported_at_the_key():
    base = json.loads((FIXTURES / "llama-4-maverick-17b-128e.json").read_text())
    config = dict(base, text_config=dict(base["text_config"], no_rope_layers=[1, 0, 2]))
    (diagnostic,) = _import_text(config)
    assert "KV303 'text_config.no_rope_layers' must list 48 flags of 0 or 1" in diagnostic


def test_wrong_value_type():
    (diagnostic,) = _import_text(dict(LLAMA, num_key_value_heads="8"))
    assert "KV307 'num_key_value_heads' must be an integer in [1, 4096], found '8'" in diagnostic


def test_window_at_least_the_context_is_full_attention():
    config = dict(LLAMA, sliding_window=262144)  # Phi-3-mini-128k style
    result = import_config("config.json", json.dumps(config))
    assert result.text is not None
    assert "attention: full" in result.text and "window:" not in result.text


def test_use_sliding_window_false_ignores_the_declared_window():
    config = dict(LLAMA, sliding_window=131072, use_sliding_window=False, max_window_layers=28)
    result = import_config("config.json", json.dumps(config))
    assert result.text is not None and "sliding" not in result.text


# --------------------------------------------------------------------------- compact patterns


def test_compact_pattern_finds_the_shortest_cycle():
    assert compact_pattern(["a"] * 5) == ["a"]
    assert compact_pattern(["s", "f"] * 12) == ["s", "f"]
    assert compact_pattern((["l"] * 5 + ["g"]) * 10 + ["l", "l"]) == ["l"] * 5 + ["g"]
    assert compact_pattern(["a", "b", "c"]) == ["a", "b", "c"]
    assert compact_pattern(["f"] * 3 + ["s"] * 2) == ["f"] * 3 + ["s"] * 2


@given(st.lists(st.sampled_from("abc"), min_size=1, max_size=40))
def test_compact_pattern_reproduces_and_is_minimal(kinds: list[str]):
    pattern = compact_pattern(kinds)
    assert [pattern[i % len(pattern)] for i in range(len(kinds))] == kinds
    for shorter in range(1, len(pattern)):
        assert [kinds[i % shorter] for i in range(len(kinds))] != kinds


# --------------------------------------------------------------------------- the command


def test_cli_prints_the_spec_to_stdout(capsys: pytest.CaptureFixture[str]):
    assert main(["import-hf", str(FIXTURES / "llama-3.1-8b.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# yaml-language-server: $schema=../kvspec.schema.json\n")
    assert load_bytes("stdout.yaml", out.encode()).family is not None


def test_cli_writes_atomically_a_spec_that_loads_clean(tmp_path: Path):
    out = tmp_path / "families" / "llama.yaml"
    assert main(["-q", "import-hf", str(FIXTURES / "llama-3.1-8b.json"), "--out", str(out)]) == 0
    loaded = load_path(out)
    assert loaded.diagnostics == [] and loaded.family is not None
    assert "llama-3.1-8b.json" in out.read_text().splitlines()[1]
    assert sorted(p.name for p in out.parent.iterdir()) == ["llama.yaml"]  # no temp file left


def test_cli_writes_nothing_on_diagnostics(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "out.yaml"
    code = main(["import-hf", str(FIXTURES / "contradictory.json"), "--out", str(out)])
    assert code == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert "KV303" in capsys.readouterr().out


def test_cli_keeps_an_existing_file_on_diagnostics(tmp_path: Path):
    out = tmp_path / "out.yaml"
    out.write_text("previous\n")
    args = ["import-hf", str(FIXTURES / "unknown-field.json"), "--out", str(out), "--force"]
    assert main(args) == 1  # even --force replaces nothing when the config has findings
    assert out.read_text() == "previous\n"


@pytest.mark.parametrize(
    "args",
    [
        ["import-hf", "does/not/exist.json"],
        ["import-hf", str(FIXTURES / "llama-3.1-8b.json"), "--family", "Not-An-Id"],
        ["import-hf", str(FIXTURES / "llama-3.1-8b.json"), "--model", "class"],
        ["import-hf", str(FIXTURES / "llama-3.1-8b.json"), "--tokens-per-block", "48"],
        ["import-hf", str(FIXTURES / "llama-3.1-8b.json"), "--kv-cache-dtype", "int4"],
    ],
)
def test_cli_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]):
    try:
        code = main(args)
    except SystemExit as exc:  # argparse rejects bad choices itself
        code = exc.code
    assert code == 2
    assert capsys.readouterr().out == ""


def test_granite_4_0_h_tiny_published_config():
    """Granite 4.0 (granitemoehybrid) spells the Mamba-2 fields mamba_n_heads, mamba_d_head,
    mamba_d_state, mamba_n_groups, mamba_d_conv and lists layer_types "mamba" / "attention"
    (tests/fixtures/hf/granite-4.0-h-tiny.json, the published numbers)."""
    family = imported("granite-4.0-h-tiny", "--tokens-per-block", "64")
    (model,) = family.models
    kinds = layer_kinds(model)
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [5, 15, 25, 35]
    assert model.layers.pattern == ["mamba"] * 5 + ["full"] + ["mamba"] * 4
    state = model.layer_kinds["mamba"].mamba
    assert state is not None
    assert (state.num_heads, state.head_dim, state.d_state, state.n_groups, state.d_conv) == (
        48, 64, 128, 1, 4,
    )  # fmt: skip
    # no head_dim in the config: hidden_size 1536 / num_attention_heads 12 = 128
    assert model.layer_kinds["full"].head_dim == 128
    # 36 Mamba-2 layers: conv (4 - 1) * (48 * 64 + 2 * 1 * 128) = 9,984 + ssm 48 * 64 * 128 =
    # 393,216 elements, * 2 B = 806,400 B each; 4 attention layers * 2 * 4 * 128 * 2 B
    assert fixed_bytes_per_request(model, tpb=64) == 36 * 806400
    assert full_slope(model) == 4 * 2 * 4 * 128 * 2


def test_granite_4_ssm_dtype_keeps_its_own_dtype():
    """A config that sets mamba_ssm_dtype (the published one does not: this is the published
    config plus that one field) keeps the SSM state in it."""
    config = json.loads((FIXTURES / "granite-4.0-h-tiny.json").read_text(encoding="utf-8"))
    config["mamba_ssm_dtype"] = "float32"
    result = import_config("granite.json", json.dumps(config))
    assert [d.render() for d in result.diagnostics] == []
    assert result.text is not None
    assert "num_heads: 48  # config.json mamba_n_heads" in result.text
    loaded = load_bytes("granite.yaml", result.text.encode())
    assert loaded.family is not None, [d.render() for d in loaded.diagnostics]
    (model,) = loaded.family.models
    state = model.layer_kinds["mamba"].mamba
    assert state is not None and state.ssm_dtype == "fp32"


def test_jamba_attn_layer_period_and_mamba1_state():
    """Jamba places attention where i % attn_layer_period == attn_layer_offset and keeps a
    Mamba-1 state elsewhere: d_inner = mamba_expand * hidden_size channels, no heads or
    groups (tests/fixtures/hf/jamba-1.5-mini.json, the published numbers)."""
    family = imported("jamba-1.5-mini", "--tokens-per-block", "64")
    (model,) = family.models
    kinds = layer_kinds(model)
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [4, 12, 20, 28]
    mamba1 = model.layer_kinds["mamba1"].mamba1
    assert mamba1 is not None and model.layer_kinds["mamba1"].mamba is None
    # d_inner = mamba_expand 2 * hidden_size 4096
    assert (mamba1.d_inner, mamba1.d_state, mamba1.d_conv) == (8192, 16, 4)
    # 28 Mamba-1 layers: conv 8192 * (4 - 1) + ssm 8192 * 16 elements, * 2 B = 311,296 B each
    assert fixed_bytes_per_request(model, tpb=64) == 28 * 311296
    assert full_slope(model) == 4 * 2 * 8 * 128 * 2


def _jamba_with(**changes: object) -> list[str]:
    config = json.loads((FIXTURES / "jamba-1.5-mini.json").read_text(encoding="utf-8"))
    config.update(changes)
    result = import_config("jamba.json", json.dumps(config, indent=1))
    assert result.text is None
    return [d.render() for d in result.diagnostics]


def test_jamba_with_mamba2_head_fields_is_ambiguous():
    (message,) = _jamba_with(mamba_n_heads=128)
    assert message.startswith("jamba.json:")
    assert "KV313 'mamba_n_heads' is a Mamba-2 field, but attn_layer_period places " in message


def test_jamba_attention_offset_past_the_period_is_contradictory():
    (message,) = _jamba_with(attn_layer_offset=8)
    assert "KV303 attn_layer_offset 8 is not below attn_layer_period 8" in message


def test_vocab_size_is_the_language_models_own():
    # Qwen2.5-7B's config.json: vocab_size 152,064; Qwen2.5-0.5B's 151,936 (a draft vLLM
    # refuses for the 7B); Llama-3.2-11B-Vision's text_config.vocab_size 128,256. Gemma 3 27B's
    # multimodal config.json gives none (its text_config omits it): nothing is guessed.
    assert imported("qwen2.5-7b").model("qwen2_5_7b").vocab_size == 152064
    assert imported("qwen2.5-0.5b").model("qwen2_5_0_5b").vocab_size == 151936
    text, _ = run_import(FIXTURES / "llama-3.2-11b-vision.json")
    assert "    vocab_size: 128256  # config.json text_config.vocab_size\n" in text
    assert "vocab_size" not in run_import(FIXTURES / "gemma-3-27b.json")[0]


def test_vocab_size_out_of_range_is_positioned():
    text = json.dumps(dict(LLAMA, vocab_size=0), indent=2)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if '"vocab_size"' in row)
    (diagnostic,) = _import_text(text)
    assert diagnostic.startswith(f"config.json:{line}:3: KV30")
    assert "vocab_size" in diagnostic
