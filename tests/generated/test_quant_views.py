"""The shim allocates quantized layouts as the engines lay them out (docs/cost-model.md §1):
typed element views beside their scale views, in the pool rows of the layer, and the shipped
quantized families reserve exactly the bytes their sizing modules charge."""

from __future__ import annotations

import importlib

import pytest
import torch


def make(rendered, model, **kw):
    params = {
        "max_batch_size": 2,
        "max_num_tokens": 64,
        "max_seq_len": 256,
        "max_tokens": 512,
        "device": "cpu",
    }
    params.update(kw)
    return rendered.allocator.KVCacheShim(model, **params)


@pytest.fixture(scope="module")
def fx_quant(rendered_families):
    return rendered_families("fx_quant_t32")


def test_per_token_head_views_hold_one_fp32_scale_per_head(fx_quant):
    shim = make(fx_quant, "scaled", tp_size=2)
    views = shim.layer_views("layers.0")  # g: 3 KV heads of 32 -> ceil(3/2) = 2 per rank
    pages = views["k"].shape[0]
    assert set(views) == {"k", "k_scale", "v", "v_scale"}
    assert (views["k"].shape, views["k"].dtype) == ((pages, 32, 2, 32), torch.float8_e4m3fn)
    assert (views["k_scale"].shape, views["k_scale"].dtype) == ((pages, 32, 2), torch.float32)
    views = shim.layer_views("layers.2")  # i8: int8 elements
    assert views["v"].dtype == torch.int8 and views["v_scale"].shape[-1] == 3  # 6 heads / 2


def test_mx_views_hold_one_scale_byte_per_32_elements(fx_quant):
    shim = make(fx_quant, "scaled")
    mx8 = shim.layer_views("layers.1")  # 2 heads of 64: 2 scale bytes per head
    assert mx8["k"].dtype == torch.float8_e4m3fn and mx8["k_scale"].shape[-2:] == (2, 2)
    mx4 = shim.layer_views("layers.3")  # 4 heads of 32, two elements per byte
    assert mx4["k"].shape[-2:] == (4, 16) and mx4["k"].dtype == torch.uint8
    assert mx4["k_scale"].shape[-2:] == (4, 1) and mx4["k_scale"].element_size() == 1


def test_scale_views_alias_the_pool_row_of_their_layer(fx_quant):
    shim = make(fx_quant, "scaled")
    pool = shim.pool("full")
    views = shim.layer_views("layers.0")
    row = pool.tensor[1]
    row.zero_()  # pools are torch.empty: clear page 1 so only what we write can read 2.0
    views["k_scale"][1].fill_(2.0)
    # In page 1, some fp32 words of the row read back 2.0: the scales live in the pool.
    words = row[: row.numel() // 4 * 4].view(torch.float32)
    assert int(words.eq(2.0).sum()) == 32 * 3  # 32 tokens x 3 heads of K scales


def test_ds_mla_views_are_latent_scales_rope_and_index(fx_quant):
    shim = make(fx_quant, "sparse_mla", tp_size=4)
    views = shim.layer_views("layers.0")
    shapes = {name: (tuple(v.shape[2:]), v.dtype) for name, v in views.items()}
    assert shapes == {
        "latent": ((256,), torch.float8_e4m3fn),
        "latent_scale": ((2,), torch.float32),  # 256 / 128
        "rope": ((32,), torch.bfloat16),
        "index_k": ((128,), torch.float8_e4m3fn),
        "index_k_scale": ((1,), torch.float32),
    }


@pytest.mark.parametrize(
    ("family", "model", "per_token"),
    [
        # 61 x (656 fp8_ds_mla + 132 index-K) = 48,068 B per token.
        ("deepseek_v3_2", "deepseek_v3_2_exp", 48_068),
        # 94 layers x 2 (K, V) x 4 heads x (128 fp8 + 4 fp32 scale) = 99,264 B per token.
        ("qwen3_moe", "qwen3_235b_a22b_fp8_pth", 99_264),
    ],
)
def test_shipped_quantized_families_reserve_what_they_charge(family, model, per_token):
    sizing = importlib.import_module(f"generated.{family}.sizing")
    allocator = importlib.import_module(f"generated.{family}.allocator")
    kw = {"max_batch_size": 1, "max_num_tokens": 256, "max_seq_len": 4096}
    assert sizing.cache_costs(model, **kw)["target"].slope == per_token
    shim = allocator.KVCacheShim(model, max_tokens=4096, device="meta", **kw)
    assert shim.quota_bytes() == sizing.quota_from_max_tokens(model, 4096, **kw)
    assert shim.quota_bytes()["target"] >= 4096 * per_token
