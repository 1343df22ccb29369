"""The shipped model families: they load and lint clean, cite their sources, and their KV
bytes match hand derivations from the published config.json numbers (docs/cost-model.md §1, §3).

The small helpers below compute straight from the spec data, independently of the cost model,
so that a wrong number in a spec and a wrong formula in the generator cannot hide each other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_family, load_path
from kvgen._spec.models import Family, LayerKind, LayerStack, Model

FAMILIES_DIR = Path(__file__).resolve().parents[2] / "schema" / "families"
FAMILY_FILES = sorted(FAMILIES_DIR.glob("*.yaml"))
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def layer_kinds(stack: LayerStack) -> list[LayerKind]:
    """Kind of every layer: layer i has pattern[i % len(pattern)]."""
    pattern = stack.layers.pattern
    return [stack.layer_kinds[pattern[i % len(pattern)]] for i in range(stack.layers.count)]


def layer_bytes(kind: LayerKind, dtype: str = "bf16", tp: int = 1) -> int:
    """b_l of docs/cost-model.md §1: bytes per token of one layer on one rank (0 for recurrent and
    cache-less ``attention: none`` layers)."""
    size = DTYPE_BYTES[dtype]
    if kind.attention in ("recurrent", "none"):
        return 0
    if kind.bytes_per_token is not None:
        return kind.bytes_per_token + kind.extra_bytes_per_token
    if kind.kv_lora_rank is not None:  # MLA latent, never split by TP
        return (kind.kv_lora_rank + kind.qk_rope_head_dim) * size + kind.extra_bytes_per_token
    assert kind.kv_heads is not None and kind.head_dim is not None
    return 2 * ceil_div(kind.kv_heads, tp) * kind.head_dim * size + kind.extra_bytes_per_token


def bytes_per_token(stack: LayerStack, dtype: str = "bf16", tp: int = 1) -> int:
    """KV bytes one token adds across all layers (full and sliding alike)."""
    return sum(layer_bytes(kind, dtype, tp) for kind in layer_kinds(stack))


def is_window_bounded(kind: LayerKind, max_seq_len: int) -> bool:
    """SWA in the fixed cost: a sliding kind whose window is below max_seq_len
    (docs/cost-model.md §1)."""
    return kind.attention == "sliding" and kind.window is not None and kind.window < max_seq_len


def pages(window: int, headroom: int, tpb: int) -> int:
    """Peak SWA pages per request: ceil((w + H - 2) / tpb) + 1 (docs/cost-model.md §3)."""
    return ceil_div(window + headroom - 2, tpb) + 1


def fixed_bytes_per_request(
    model: Model, tpb: int, headroom: int = 1, dtype: str = "bf16", tp: int = 1
) -> int:
    """Per-request window cost (sum over SWA layers of b_l * tpb * pages) plus recurrent state
    plus the encoder K/V of cross-attention layers (b_l * tpb * ceil(e / tpb), §4)."""
    total = 0
    for kind in layer_kinds(model):
        if kind.attention == "cross":
            total += layer_bytes(kind, dtype, tp) * tpb * ceil_div(kind.encoder_tokens or 0, tpb)
        elif kind.state_bytes is not None:
            total += ceil_div(kind.state_bytes, tp)
        elif kind.mamba is not None:
            # conv (heads*head_dim + 2*groups*d_state)/tp x (d_conv-1) + SSM heads/tp x
            # head_dim x d_state, both in the cache dtype here (§8).
            m = kind.mamba
            conv = (m.num_heads * m.head_dim + 2 * m.n_groups * m.d_state) // tp * (m.d_conv - 1)
            ssm = m.num_heads // tp * m.head_dim * m.d_state
            total += (conv + ssm) * DTYPE_BYTES[dtype]
        elif kind.mamba1 is not None:
            # Mamba-1: conv d_inner/tp x (d_conv-1) + SSM d_inner/tp x d_state (§8)
            m1 = kind.mamba1
            total += m1.d_inner // tp * (m1.d_conv - 1 + m1.d_state) * DTYPE_BYTES[dtype]
        elif is_window_bounded(kind, model.max_seq_len):
            sink_pages = ceil_div(kind.sink_tokens, tpb)
            total += (
                layer_bytes(kind, dtype, tp)
                * tpb
                * (pages(kind.window, headroom, tpb) + sink_pages)
            )
    return total


def full_slope(model: Model, dtype: str = "bf16", tp: int = 1) -> int:
    """Bytes per token of history over full-attention layers only (docs/cost-model.md §4 slope)."""
    return sum(
        layer_bytes(kind, dtype, tp)
        for kind in layer_kinds(model)
        if kind.state_bytes is None
        and kind.attention != "cross"
        and not is_window_bounded(kind, model.max_seq_len)
    )


def family(name: str) -> Family:
    return load_family(FAMILIES_DIR / f"{name}.yaml")


def model(family_name: str, model_name: str) -> Model:
    return family(family_name).model(model_name)


# --------------------------------------------------------------------------- every file


def test_at_least_twelve_families_ship():
    assert len(FAMILY_FILES) >= 12


@pytest.mark.parametrize("path", FAMILY_FILES, ids=lambda p: p.stem)
def test_family_loads_and_lints_clean(path: Path):
    loaded = load_path(path)
    assert loaded.diagnostics == []
    assert loaded.family is not None
    assert loaded.family.family == path.stem
    assert [d.render() for d in lint_loaded(loaded)] == []


@pytest.mark.parametrize("path", FAMILY_FILES, ids=lambda p: p.stem)
def test_family_file_starts_with_the_schema_comment(path: Path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../kvspec.schema.json"


_NUMBER_LINE = re.compile(r"^\s*(?:-\s+)?[a-z_]+:\s*\d+\s*(?:#.*)?$")


@pytest.mark.parametrize("path", FAMILY_FILES, ids=lambda p: p.stem)
def test_every_number_names_its_source(path: Path):
    lines = path.read_text(encoding="utf-8").splitlines()
    bare = [
        f"{path.name}:{i}: {line.strip()}"
        for i, line in enumerate(lines, 1)
        if _NUMBER_LINE.match(line)
        and not line.strip().startswith("schema_version")
        and "#" not in line
    ]
    assert bare == []


@pytest.mark.parametrize("path", FAMILY_FILES, ids=lambda p: p.stem)
def test_family_has_speculative_profiles(path: Path):
    assert load_family(path).speculative


def test_required_families_ship():
    names = {p.stem for p in FAMILY_FILES}
    required = {"llama3", "mistral", "gemma2", "gemma3", "gpt_oss", "qwen3", "phi3", "deepseek_v3"}
    assert required <= names
    assert {"cohere2", "openelm", "nemotron_h", "qwen3_next"} <= names


def test_llama3_ships_the_released_sizes():
    names = [m.name for m in family("llama3").models]
    assert names == ["llama3_1_8b", "llama3_1_70b", "llama3_1_405b", "llama3_2_1b", "llama3_2_3b"]


def test_profiles_cover_every_draft_mode_family():
    modes = {p.mode for path in FAMILY_FILES for p in load_family(path).speculative}
    assert {
        "eagle3",
        "eagle3_two_model",
        "mtp",
        "mtp_eagle",
        "pard",
        "draft_target",
        "ngram",
    } <= modes


# --------------------------------------------------------------------------- bytes per token


def test_llama3_1_8b_slope():
    # 32 layers * 2 (K, V) * 8 KV heads * 128 head_dim * 2 bytes (bf16) = 131,072 B per token
    m = model("llama3", "llama3_1_8b")
    assert full_slope(m) == 131072
    assert bytes_per_token(m) == 131072
    assert fixed_bytes_per_request(m, tpb=32) == 0


def test_llama3_1_70b_and_405b_slopes():
    # 70B: 80 layers * 2 * 8 * 128 * 2 = 327,680; 405B: 126 * 2 * 8 * 128 * 2 = 516,096
    assert full_slope(model("llama3", "llama3_1_70b")) == 327680
    assert full_slope(model("llama3", "llama3_1_405b")) == 516096


def test_llama3_2_1b_has_head_dim_64():
    # 16 layers * 2 * 8 KV heads * 64 head_dim * 2 bytes = 32,768
    assert full_slope(model("llama3", "llama3_2_1b")) == 32768


def test_deepseek_v3_mla_slope():
    # MLA: (kv_lora_rank 512 + qk_rope_head_dim 64) * 2 bytes * 61 layers = 70,272 B per token
    m = model("deepseek_v3", "deepseek_v3")
    assert full_slope(m) == 70272


def test_deepseek_v3_mla_is_not_split_by_tensor_parallelism():
    # the latent is replicated on every rank: still 70,272 B per token at tp=8
    assert full_slope(model("deepseek_v3", "deepseek_v3"), tp=8) == 70272


def test_deepseek_v3_mtp_adds_one_mla_layer():
    profile = family("deepseek_v3").profile("mtp1")
    assert profile is not None and profile.extra_layers is not None
    # one MTP layer of the same shape: (512 + 64) * 2 = 1,152 B per token
    assert bytes_per_token(profile.extra_layers) == 1152


def test_gemma3_27b_bytes_and_window_cost():
    m = model("gemma3", "gemma3_27b")
    # all 62 layers: 62 * 2 * 16 KV heads * 128 * 2 B = 507,904 B per token
    assert bytes_per_token(m) == 507904
    # globals at layers 5, 11, ..., 59: 10 layers -> slope 10 * 8,192 = 81,920
    assert full_slope(m) == 81920
    # 52 local layers, window 1024, tpb 64, H=1: pages = ceil(1023/64) + 1 = 17
    # -> 52 * 8,192 B * 64 * 17 = 463,470,592 B per request
    assert fixed_bytes_per_request(m, tpb=64) == 463470592


def test_gemma3_1b_window_is_512():
    m = model("gemma3", "gemma3_1b")
    windows = {k.window for k in m.layer_kinds.values() if k.attention == "sliding"}
    assert windows == {512}
    # 26 layers, globals at 5, 11, 17, 23 -> 22 local of 2 * 1 * 256 * 2 = 1,024 B;
    # pages(512, 1) at tpb 64 = ceil(511/64) + 1 = 9 -> 22 * 1,024 * 64 * 9 = 12,976,128
    assert fixed_bytes_per_request(m, tpb=64) == 12976128


def test_mistral_7b_v0_1_slides_every_layer():
    m = model("mistral", "mistral_7b_v0_1")
    assert full_slope(m) == 0
    # 32 layers * 4,096 B * 64 * pages(4096, 1) where pages = ceil(4095/64) + 1 = 65
    assert fixed_bytes_per_request(m, tpb=64) == 32 * 4096 * 64 * 65


def test_mistral_7b_v0_1_window_cost_grows_with_headroom():
    # eagle3 K=4 gives H = 8: pages = ceil((4096 + 6)/64) + 1 = 66, one more than H=1
    m = model("mistral", "mistral_7b_v0_1")
    assert fixed_bytes_per_request(m, tpb=64, headroom=8) == 32 * 4096 * 64 * 66


def test_gpt_oss_20b_alternates_sliding_128_and_full():
    m = model("gpt_oss", "gpt_oss_20b")
    # 12 full layers * 2 * 8 * 64 * 2 B = 24,576 B per token at bf16 (12,288 at fp8)
    assert full_slope(m) == 24576
    assert full_slope(m, dtype="fp8") == 12288
    # 12 sliding layers * 2,048 B * 64 * pages(128, 1) = ceil(127/64) + 1 = 3
    assert fixed_bytes_per_request(m, tpb=64) == 12 * 2048 * 64 * 3


def test_phi3_128k_windows_that_cover_the_context_are_full():
    m = model("phi3", "phi3_mini_128k")
    assert fixed_bytes_per_request(m, tpb=64) == 0
    # 32 layers * 2 * 32 KV heads * 96 head_dim * 2 B = 393,216
    assert full_slope(m) == 393216


def test_qwen2_5_small_models_replicate_heads_under_tp():
    m = model("qwen2_5", "qwen2_5_1_5b")
    # 2 KV heads: tp=8 holds ceil(2/8) = 1 head per rank, not 2/8 of one
    # 28 layers * 2 * 1 * 128 * 2 = 14,336 B per token per rank
    assert full_slope(m, tp=8) == 14336
    assert full_slope(m, tp=1) == 28672


def test_openelm_per_layer_heads_are_exact():
    m = model("openelm", "openelm_270m")
    # num_kv_heads 3 x5, 4 x7, 5 x4 = 63 heads; 63 * 2 * 64 * 2 B = 16,128 B per token
    assert full_slope(m) == 16128
    # an average head count (63/16) would not even be an integer
    assert [k.kv_heads for k in layer_kinds(m)] == [3] * 5 + [4] * 7 + [5] * 4


def test_cohere2_command_r7b_three_local_one_global():
    m = model("cohere2", "command_r7b")
    # 8 global layers * 4,096 B = 32,768 B per token; 24 local layers of window 4096
    assert full_slope(m) == 32768
    assert fixed_bytes_per_request(m, tpb=64) == 24 * 4096 * 64 * 65


def test_qwen3_next_linear_state_is_per_request():
    m = model("qwen3_next", "qwen3_next_80b_a3b")
    # 12 full layers * 2 * 2 KV heads * 256 * 2 B = 24,576 B per token
    assert full_slope(m) == 24576
    # 36 Gated DeltaNet layers: conv (4-1)*(2*16*128 + 32*128) = 24,576 elements,
    # state 32*128*128 = 524,288 elements, * 2 B = 1,097,728 B each
    assert fixed_bytes_per_request(m, tpb=64) == 36 * 1097728


def test_nemotron_h_8b_mamba_state_and_attention():
    m = model("nemotron_h", "nemotron_h_8b")
    # 4 attention layers * 2 * 8 * 128 * 2 B = 16,384 B per token
    assert full_slope(m) == 16384
    # 24 Mamba-2 layers: conv (4-1)*(128*64 + 2*8*128) = 30,720, ssm 128*64*128 = 1,048,576
    # elements, * 2 B = 2,158,592 B each
    assert fixed_bytes_per_request(m, tpb=64) == 24 * 2158592
    # the recurrent state splits by tp as the engine does (§8): conv 10240/2 * 3 * 2 B =
    # 30,720 + ssm 64 * 64 * 128 * 2 B = 1,048,576 per layer at tp=2
    assert fixed_bytes_per_request(m, tpb=64, tp=2) == 24 * (30720 + 1048576)


def test_granite_4_0_h_tiny_mamba2_state_and_attention():
    m = model("granite4", "granite_4_0_h_tiny")
    kinds = layer_kinds(m)
    # config.json layer_types: attention at 5, 15, 25, 35 of 40; the other 36 are Mamba-2
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [5, 15, 25, 35]
    assert sum(k.attention == "recurrent" for k in kinds) == 36
    # 4 attention layers * 2 * 4 KV heads * (1536 / 12 = 128) * 2 B = 8,192 B per token
    assert full_slope(m) == 8192
    # 36 Mamba-2 layers: conv (4-1)*(48*64 + 2*1*128) = 9,984, ssm 48*64*128 = 393,216
    # elements, * 2 B = 806,400 B each
    assert fixed_bytes_per_request(m, tpb=64) == 36 * 806400
    # at tp=2: conv 3328/2 * 3 = 4,992 + ssm 24*64*128 = 196,608 elements, * 2 B = 403,200
    assert fixed_bytes_per_request(m, tpb=64, tp=2) == 36 * 403200


def test_jamba_1_5_mini_mamba1_state_and_attention():
    m = model("jamba", "jamba_1_5_mini")
    kinds = layer_kinds(m)
    # attn_layer_period 8, attn_layer_offset 4: attention where i % 8 == 4
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [4, 12, 20, 28]
    # 4 attention layers * 2 * 8 KV heads * (4096 / 32 = 128) * 2 B = 16,384 B per token
    assert full_slope(m) == 16384
    # 28 Mamba-1 layers, d_inner = mamba_expand 2 * hidden_size 4096 = 8,192 channels:
    # conv 8192 * (4-1) = 24,576 + ssm 8192 * 16 = 131,072 elements, * 2 B = 311,296 B each
    assert fixed_bytes_per_request(m, tpb=64) == 28 * 311296
    # at tp=8 every buffer splits by 8: 1,024 channels * (3 + 16) * 2 B = 38,912 B each
    assert fixed_bytes_per_request(m, tpb=64, tp=8) == 28 * 38912


def test_nemotron_h_pattern_keeps_attention_positions():
    m = model("nemotron_h", "nemotron_h_8b")
    kinds = layer_kinds(m)
    # hybrid_override_pattern M-M-M-M*-M-M-M-M-M*-...: one entry per layer of the 52
    # (num_hidden_layers); "*" is at characters 7, 18, 29 and 40.
    assert len(kinds) == 52
    assert [i for i, k in enumerate(kinds) if k.attention == "full"] == [7, 18, 29, 40]
    # 24 Mamba-2 ("M") and 24 MLP blocks ("-", attention: none, no cache).
    assert sum(k.attention == "recurrent" for k in kinds) == 24
    assert sum(k.attention == "none" for k in kinds) == 24
    symbols = {"recurrent": "M", "full": "*", "none": "-"}
    pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
    assert "".join(symbols[k.attention] for k in kinds) == pattern
    assert layer_kinds(model("nemotron_h", "nemotron_h_4b")) != []
    assert model("nemotron_h", "nemotron_h_4b").layers.pattern == m.layers.pattern


def test_llama3_pard_draft_has_llama_3_2_1b_shape():
    profile = family("llama3").profile("pard4")
    assert profile is not None and profile.draft is not None
    # 16 layers * 2 * 8 * 64 * 2 B = 32,768, same as llama3_2_1b
    assert bytes_per_token(profile.draft) == bytes_per_token(model("llama3", "llama3_2_1b"))
