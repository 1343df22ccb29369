"""A V head size of its own (``v_head_dim``, issue 22): K and V of different sizes, derived by
hand on the static side, the shim's tensors, the engines' rows and the lint rules.

The kind below is MiMo-V2-Flash's attention shape (K 192, V 128; vLLM builds it as
``Attention(head_size=192, head_size_v=128)``, an ``AttentionSpec`` whose page holds
``num_kv_heads x (head_size + head_size_v) x dtype`` per token)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._spec.loader import load_bytes, load_family

from tests.workloads import render_family

SPEC = b"""\
schema_version: 1
family: vdim
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 8192
    layer_kinds:
      full: {attention: full, kv_heads: 4, head_dim: 192, v_head_dim: 128}
      local: {attention: sliding, window: 1024, kv_heads: 4, head_dim: 192, v_head_dim: 128}
    layers: {count: 4, pattern: [full, local]}
"""
# Per layer and token at tp 1: 4 KV heads x (192 + 128) x 2 B = 2,560 B (a K-sized V would be
# 4 x 2 x 192 x 2 = 3,072 B). 2 full layers: slope 5,120 B per token of history.
B_L = 4 * (192 + 128) * 2
KW = dict(max_batch_size=2, max_num_tokens=1024, max_seq_len=8192)


@pytest.fixture(scope="module")
def vdim(tmp_path_factory):
    loaded = load_bytes("vdim.yaml", SPEC)
    assert loaded.family is not None, loaded.diagnostics
    return render_family(loaded.family, SPEC, tmp_path_factory.mktemp("vdim"), "vdim.yaml")


def test_static_bytes_per_token_by_hand(vdim):
    # tp 1: slope 2 x 2,560 = 5,120; sliding ctx 2 x 2,560 = 5,120. tp 2: 2 heads per rank,
    # 2 x (192 + 128) x 2 = 1,280 B per layer: slope 2,560. tp 8: ceil(4/8) = 1 head, 640 B.
    assert B_L == 2560
    for tp, per_layer in ((1, 2560), (2, 1280), (8, 640)):
        terms = vdim.sizing.cost_terms("m", tp_size=tp, **KW)["target"]
        assert terms["slope"] == 2 * per_layer
        assert terms["ctx_swa"] == 2 * per_layer


def test_shim_allocates_k_and_v_with_their_own_head_dims(vdim):
    shim = vdim.allocator.KVCacheShim("m", max_tokens=4096, device="meta", **KW)
    views = shim.layer_views(0)
    assert tuple(views["k"].shape[1:]) == (16, 4, 192)
    assert tuple(views["v"].shape[1:]) == (16, 4, 128)
    # The shim's bytes come from its own tensors; the static quota agrees to the byte.
    static = vdim.sizing.quota_from_max_tokens("m", 4096, **KW)["target"]
    assert shim.quota_bytes()["target"] == static


def test_engines_page_k_and_v_with_their_own_head_dims(vdim):
    # vLLM: a page is block 16 x 2,560 B = 40,960 B per layer. Two groups of 2 layers (the
    # full and the sliding ones) share 2 KV tensors, so a block costs 2 x 40,960 = 81,920 B:
    # 42,949,672,960 / 81,920 = 524,288 blocks (with a K-sized V: 2 x 49,152 -> 436,906).
    cap = engine_capacity(vdim.family, "m", 40 << 30, engine="vllm", block_size=16,
                          max_seq_len=8192, max_num_tokens=8192)  # fmt: skip
    assert cap.num_blocks == 524_288
    # SGLang (hybrid SWA off for this family): one full-attention pool over every layer, cell
    # 4 layers x 2,560 B = 10,240 B per token: 40 GiB / 10,240 = 4,194,304 tokens.
    cap = engine_capacity(vdim.family, "m", 40 << 30, engine="sglang", block_size=16,
                          max_seq_len=8192, max_num_tokens=8192)  # fmt: skip
    assert cap.kv_tokens == 4_194_304


def test_mla_kind_takes_no_v_head_dim():
    text = SPEC.replace(
        b"full: {attention: full, kv_heads: 4, head_dim: 192, v_head_dim: 128}",
        b"full: {attention: full, kv_lora_rank: 512, qk_rope_head_dim: 64, v_head_dim: 128}",
    )
    loaded = load_bytes("vdim.yaml", text)
    assert loaded.family is None
    assert any("v_head_dim" in d.render() and "kv_heads" in d.render() for d in loaded.diagnostics)


def test_fx_vdim_goldens_by_hand():
    # tests/fixtures/specs/fx_vdim.yaml through the engines' own planners (refresh_goldens.py
    # --family fx_vdim): 2 full + 4 sliding layers of 4 x (192 + 128) x 2 = 2,560 B a token.
    # vLLM, block 16: groups of 2 layers (3 groups: 2 sliding, 1 full) over 2 KV tensors, a
    # block 2 x 16 x 2,560 = 81,920 B (K-sized V: 98,304): 40 GiB / 81,920 = 524,288 blocks.
    # SGLang: one pool over the 6 layers, 15,360 B a token: floor(42,949,672,960 / 15,360) =
    # 2,796,202, rounded down to whole pages of 16: 2,796,192 tokens.
    root = Path(__file__).resolve().parents[2]
    family = load_family(root / "tests/fixtures/specs/fx_vdim.yaml")

    def golden(engine: str) -> dict:
        cases = json.loads((root / f"tests/fixtures/engines/{engine}.json").read_text())["cases"]
        return next(
            c["engine_output"]
            for c in cases
            if c["inputs"]["family"] == "fx_vdim"
            and c["inputs"]["block_size"] == 16
            and c["inputs"]["max_model_len"] == 8192
        )

    goldens = {engine: golden(engine) for engine in ("vllm", "sglang")}
    assert goldens["vllm"]["bytes_per_block"] == 2 * 16 * B_L == 81_920
    assert goldens["vllm"]["num_blocks"] == (40 << 30) // 81_920 == 524_288
    assert goldens["sglang"]["max_total_num_tokens"] == (40 << 30) // (6 * B_L) // 16 * 16
    kw = dict(block_size=16, max_seq_len=8192, max_num_tokens=8192)
    vllm = engine_capacity(family, "vdim", 40 << 30, engine="vllm", mamba_cache_mode="none", **kw)
    assert vllm.num_blocks == 524_288
    sglang = engine_capacity(family, "vdim", 40 << 30, engine="sglang", **kw)
    assert sglang.kv_tokens == 2_796_192
