"""Parallel hybrid layers (Falcon-H1, issue 22): a layer that holds both a K/V cache and a
Mamba-2 state (`attention: full` with `mamba:` beside `kv_heads`). Every number is derived by
hand next to its test (docs/cost-model.md §1, §8), then the shim's own tensors and the engines'
rows are held to it."""

from __future__ import annotations

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._spec.loader import load_bytes

from tests.workloads import Harness, aligned_batch_sweep

SMALL = "falcon_h1_0_5b_instruct"
# Falcon-H1-0.5B per layer, bf16 at tp 1: K/V 2 KV heads x 2 x 64 x 2 B = 512 B per token;
# Mamba-2 state conv (4 - 1) x (24 x 64 + 2 x 1 x 128) x 2 B = 3 x 1,792 x 2 = 10,752 B and
# SSM 24 x 64 x 128 x 2 B = 393,216 B: 403,968 B per request. 36 layers.
KV_LAYER = 2 * 2 * 64 * 2
CONV = 3 * (24 * 64 + 2 * 128) * 2
SSM = 24 * 64 * 128 * 2
STATE_LAYER = CONV + SSM


@pytest.fixture(scope="module")
def falcon(rendered_families):
    return rendered_families("falcon_h1")


def test_falcon_h1_terms_by_hand(falcon):
    assert (KV_LAYER, CONV, SSM, STATE_LAYER) == (512, 10_752, 393_216, 403_968)
    # slope = 36 x 512 = 18,432 B per token; per_request = 36 x 403,968 = 14,542,848 B; one
    # reserved state row (the CUDA-graph padding slot, §8) = 14,542,848; intercept = B x
    # per_request + reserved = 8 x 14,542,848 + 14,542,848 = 130,885,632.
    terms = falcon.sizing.cost_terms(
        SMALL, max_batch_size=8, max_num_tokens=2048, max_seq_len=16384
    )["target"]
    assert terms == {
        "slope": 36 * KV_LAYER,
        "per_request": 36 * STATE_LAYER,
        "ctx_swa": 0,
        "state_reserved_rows": 36 * STATE_LAYER,
        "intercept": 9 * 36 * STATE_LAYER,
    }
    # tp 2: 1 KV head per rank (256 B); the state splits by tp: conv 3 x 896 x 2 = 5,376 and
    # SSM 12 x 64 x 128 x 2 = 196,608: 201,984 B per layer (n_groups 1 < tp: TensorRT-LLM
    # splits the conv channels as they are, 1,792 / 2).
    tp2 = falcon.sizing.cost_terms(
        SMALL, max_batch_size=8, max_num_tokens=2048, max_seq_len=16384, tp_size=2
    )["target"]
    assert (tp2["slope"], tp2["per_request"]) == (36 * 256, 36 * 201_984)


def test_shim_holds_kv_and_state_per_layer(falcon):
    kw = dict(max_batch_size=2, max_num_tokens=512, max_seq_len=4096)
    shim = falcon.allocator.KVCacheShim(SMALL, max_tokens=8192, device="meta", **kw)
    views = shim.layer_views(0)
    assert tuple(views["k"].shape[1:]) == (64, 2, 64)  # (tpb, heads, head_dim)
    assert tuple(views["v"].shape[1:]) == (64, 2, 64)
    assert views["conv"].shape[1] == CONV and views["ssm"].shape[1] == SSM
    cycles = {c.name: len(c.layers) for c in shim.managers["target"].cycles}
    assert cycles == {"full": 36, "state": 36}
    # Built from its own tensors: 36 x 512 B x 8,192 tokens (128 pages of 64) of K/V and
    # (2 + 1 reserved) slots x 36 x 403,968 B of state; the static quota agrees to the byte.
    assert shim.quota_bytes()["target"] == 36 * KV_LAYER * 8192 + 3 * 36 * STATE_LAYER
    assert shim.quota_bytes() == falcon.sizing.quota_from_max_tokens(SMALL, 8192, **kw)


@pytest.mark.parametrize("profile", ["none", "ngram4"])
def test_static_equals_shim_under_workloads(falcon, profile):
    params = dict(max_batch_size=3, max_num_tokens=256, max_seq_len=2048)
    shim = falcon.allocator.KVCacheShim(
        SMALL, speculative=profile, max_tokens=3 * (2048 + 64), device="meta",
        semantics="exact", **params,
    )  # fmt: skip
    aligned_batch_sweep(Harness(shim, falcon.sizing, params))


def test_engines_count_both_caches_per_layer(falcon):
    # SGLang (FalconH1Config: every layer in full_attention_layer_ids and linear_layer_ids):
    # 36 layers x 512 B = 18,432 B per token of the full pool; each state slot holds conv bf16
    # 10,752 + SSM in fp32 (SGLang's default) 786,432 = 797,184 B per layer.
    family = falcon.family
    plan_kw = dict(max_seq_len=8192, max_num_tokens=8192, block_size=16)
    sglang = engine_capacity(family, SMALL, 40 << 30, engine="sglang", **plan_kw)
    vllm = engine_capacity(family, SMALL, 40 << 30, engine="vllm", **plan_kw)
    without = load_bytes("f.yaml", _attention_only(falcon)).family
    assert without is not None
    # The states cost memory in both engines: fewer tokens than the attention-only twin.
    for engine, got in (("sglang", sglang), ("vllm", vllm)):
        plain = engine_capacity(without, SMALL, 40 << 30, engine=engine, **plan_kw)
        assert got.kv_tokens < plain.kv_tokens
        assert got.request_bytes > plain.request_bytes


def test_vllm_pages_by_hand(falcon):
    # vLLM 0.33.0 (tests/fixtures/engines/vllm.json, falcon-h1-0.5b config, block 16, prefix
    # caching off): 36 attention layers and 36 MambaMixer2 layers make two groups of 36. The
    # Mamba page is one state, 403,968 B; the attention block grows to hold it:
    # ceil(403,968 / 512 B per token / 16) x 16 = 800 tokens, a page of 800 x 512 = 409,600 B
    # (the Mamba page padded to it). A block is 36 such pages = 14,745,600 B, so 40 GiB hold
    # floor(42,949,672,960 / 14,745,600) = 2,912 blocks.
    cap = engine_capacity(falcon.family, SMALL, 40 << 30, engine="vllm", block_size=16,
                          max_seq_len=8191, max_num_tokens=8192,
                          mamba_cache_mode="none")  # fmt: skip
    assert -(-STATE_LAYER // KV_LAYER // 16) * 16 == 800
    assert 36 * 800 * KV_LAYER == 14_745_600
    assert cap.num_blocks == (40 << 30) // 14_745_600 == 2912


def _attention_only(rendered) -> bytes:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "schema/families/falcon_h1.yaml").read_text()
    lines = [line for line in text.splitlines() if "mamba: {" not in line]
    return "\n".join(lines).encode()


def test_mamba_on_a_full_kind_needs_kv_heads():
    text = b"""\
schema_version: 1
family: bad
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      x: {attention: full, mamba: {num_heads: 8, head_dim: 16, d_state: 16, n_groups: 1, d_conv: 4}}
    layers: {count: 2, pattern: [x]}
"""
    loaded = load_bytes("bad.yaml", text)
    assert loaded.family is None
    assert any("parallel hybrid layer and needs kv_heads" in d.render() for d in loaded.diagnostics)
