"""Published shapes of shipped families, through the generated sizing modules, each number
derived by hand from the model's config.json (b = 2 * kv_heads * head_dim * dtype bytes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sizing_support import import_generated

REPO = Path(__file__).resolve().parents[2]


def sizing(family: str):
    path = REPO / "generated" / family / "sizing.py"
    if not path.exists():
        pytest.skip("run kvgen generate")
    return import_generated(path, f"_kvgen_shipped_{family}")


def test_llama_3_1_8b_is_131072_bytes_per_token():
    # 32 layers * 2 (K, V) * 8 KV heads * 128 head_dim * 2 B (bf16) = 131072; no window.
    costs = sizing("llama3").cache_costs(
        "llama3_1_8b", max_batch_size=8, max_num_tokens=8192, max_seq_len=131072
    )
    assert costs["target"] == (131072, 0)


def test_deepseek_v3_mla_is_70272_bytes_per_token_and_mtp_adds_a_layer():
    module = sizing("deepseek_v3")
    kw = {"max_batch_size": 8, "max_num_tokens": 8192, "max_seq_len": 163840, "tp_size": 8}
    # (kv_lora_rank 512 + qk_rope_head_dim 64) * 2 B = 1152 per layer, 61 layers, unsplit by tp.
    assert module.cache_costs("deepseek_v3", **kw)["target"] == (70272, 0)
    # MTP keeps one more MLA layer in the target manager: 62 * 1152 = 71424.
    assert module.cache_costs("deepseek_v3", speculative="mtp1", **kw)["target"] == (71424, 0)


def test_gemma3_27b_five_local_to_one_global():
    # 62 layers of [l l l l l g]: g at 5, 11, ..., 59 -> 10 global, 52 local.
    # b = 2 * 16 * 128 * 2 = 8192. slope = 10 * 8192 = 81920.
    # pages(1024, H=1) at tpb 64 = ceil(1023/64) + 1 = 17: per_request = 52 * 17 * 64 * 8192.
    terms = sizing("gemma3").cost_terms(
        "gemma3_27b", max_batch_size=8, max_num_tokens=8192, max_seq_len=131072
    )["target"]
    assert terms["slope"] == 81920
    assert terms["per_request"] == 52 * 17 * 64 * 8192 == 463470592
    assert terms["ctx_swa"] == 52 * 8192
    assert terms["intercept"] == 8 * 463470592 + 8192 * 52 * 8192


def test_mistral_7b_v0_1_is_all_sliding_until_the_window_reaches_max_seq_len():
    module = sizing("mistral")
    # 32 layers, b = 2 * 8 * 128 * 2 = 4096; window 4096, tpb 64:
    # pages(4096, 1) = ceil(4095/64) + 1 = 65 -> per_request = 65 * 64 * 32 * 4096 = 545259520.
    terms = module.cost_terms(
        "mistral_7b_v0_1", max_batch_size=1, max_num_tokens=1024, max_seq_len=32768
    )["target"]
    assert (terms["slope"], terms["per_request"]) == (0, 545259520)
    # At max_seq_len 4096 the window covers the sequence: full attention, 32 * 4096 per token.
    costs = module.cache_costs(
        "mistral_7b_v0_1", max_batch_size=1, max_num_tokens=1024, max_seq_len=4096
    )
    assert costs["target"] == (131072, 0)


def test_gpt_oss_20b_fp8_alternating_windows_with_eagle3():
    module = sizing("gpt_oss")
    kw = {"max_batch_size": 1, "max_num_tokens": 256, "max_seq_len": 131072}
    # fp8: b = 2 * 8 * 64 * 1 = 1024; 24 layers alternate -> 12 sliding, 12 full.
    # slope = 12 * 1024; pages(128, 1) = ceil(127/64) + 1 = 3 -> 3 * 64 * 1024 * 12.
    none = module.cost_terms("gpt_oss_20b", **kw)["target"]
    assert (none["slope"], none["per_request"]) == (12288, 2359296)
    # EAGLE3 K=3: H = 2K = 6, pages(128, 6) = ceil(132/64) + 1 = 4; its draft layer is full
    # attention in the target manager: slope 13 * 1024.
    eagle = module.cost_terms("gpt_oss_20b", speculative="eagle3", **kw)["target"]
    assert (eagle["slope"], eagle["per_request"]) == (13312, 4 * 64 * 1024 * 12)


@pytest.mark.parametrize(
    ("tp_size", "slope", "state"),
    [
        # 48 layers of [lin lin lin full]: 12 full with b = 2 * 2 * 256 * 2 = 2048;
        # 36 linear-attention layers of 1097728 B state each (see the spec's derivation).
        (1, 12 * 2048, 36 * 1097728),
        # tp=2: 1 KV head per rank (b = 1024); state split by dimensions (§8): conv
        # 8192/2 * 3 * 2 B = 24576 + SSM 32/2 * 128 * 128 * 2 B = 524288 -> 548864 per layer.
        (2, 12 * 1024, 36 * 548864),
    ],
)
def test_qwen3_next_hybrid_charges_recurrent_state_per_request(tp_size, slope, state):
    terms = sizing("qwen3_next").cost_terms(
        "qwen3_next_80b_a3b",
        max_batch_size=4,
        max_num_tokens=1024,
        max_seq_len=65536,
        tp_size=tp_size,
    )["target"]
    assert (terms["slope"], terms["per_request"]) == (slope, state)
    # B = 4 rows + one reserved row (the CUDA-graph padding slot, §8).
    assert terms["state_reserved_rows"] == state
    assert terms["intercept"] == (4 + 1) * state


@pytest.mark.parametrize(
    ("rank", "slope", "mamba_layers"),
    [
        # 52 layers (hybrid_override_pattern M-M-M-M*-M-M-M-M-M*-..., MLP blocks included) over
        # pp 7: divmod(52, 7) = (7, 3), so ranks 0-2 hold 8 layers and ranks 3-6 hold 7:
        # [0, 8) [8, 16) [16, 24) [24, 31) [31, 38) [38, 45) [45, 52). Attention ("*") is at
        # 7, 18, 29, 40 -> ranks 0, 2, 3, 5, each 1 layer * 2 * 8 * 128 * 2 B = 4096 B/token.
        # Mamba ("M") per rank: 0 2 4 6 | 9 11 13 15 | 17 20 22 | 24 26 28 | 31 33 35 37 |
        # 39 42 44 | 46 48 50. (With the 24 MLP blocks left out, the 28 cached layers would
        # put attention on ranks 1, 2, 4, 5 instead.)
        (0, 4096, 4),
        (1, 0, 4),
        (2, 4096, 3),
        (3, 4096, 3),
        (4, 0, 4),
        (5, 4096, 3),
        (6, 0, 3),
    ],
)
def test_nemotron_h_8b_pipeline_ranks_count_mlp_blocks(rank, slope, mamba_layers):
    module = sizing("nemotron_h")
    costs = module.cache_costs(
        "nemotron_h_8b", max_batch_size=8, max_num_tokens=8192, max_seq_len=8192,
        pp_size=7, pp_rank=rank,
    )  # fmt: skip
    # intercept = (B + 1 reserved row) * mamba_layers * 2,158,592 B of Mamba-2 state (§8).
    assert costs["target"] == (slope, (8 + 1) * mamba_layers * 2158592)
