"""Quantized KV layouts with their scales (docs/cost-model.md §1): the closed forms of
``kvgen._model.quant`` are the bytes an element-by-element packer lays out, the hand-derived figures
of the engines' layouts hold, and the three implementations (``tests.reference.costmodel``, the
``kvgen.sizing.sizing_kinds`` and the shim's typed buffers) agree on every shape of a grid."""

from __future__ import annotations

import itertools
import math

import pytest
from kvgen._model import geometry as kvgen_shapes
from kvgen._model import quant
from kvgen._spec.models import LayerKind, LayerStack
from kvgen.runtime import _layers
from kvgen.runtime._tables import LayerKind as RuntimeKind
from kvgen.sizing import sizing_kinds
from kvgen.sizing.facts import DTYPE_BYTES

from tests.reference import layers

PER_ELEMENT = ("fp32", "bf16", "fp16", "fp8", "nvfp4", "fp8_per_token_head",
               "int8_per_token_head", "mxfp8", "mxfp4")  # fmt: skip


def packed_bytes(dtype: str, heads: int, head_dim: int) -> int:
    """Lay ``heads`` x ``head_dim`` elements out one at a time, as a quantizing kernel writes
    them: element bits into whole bytes, a new block scale at every block start, one fp32 per
    head for the per-token-head layouts. Independent of the ceil formulas it checks."""
    if dtype in DTYPE_BYTES:
        return heads * head_dim * DTYPE_BYTES[dtype]
    bits, block, block_scale, head_scale = quant.LAYOUTS[dtype]
    data_bits = scale_bytes = 0
    index = 0
    for _head in range(heads):
        scale_bytes += head_scale
        for _element in range(head_dim):
            if block and index % block == 0:
                scale_bytes += block_scale
            data_bits += bits
            index += 1
    whole_bytes = 0
    while whole_bytes * 8 < data_bits:
        whole_bytes += 1
    return whole_bytes + scale_bytes


@pytest.mark.parametrize("dtype", PER_ELEMENT)
def test_closed_form_is_the_packed_layout(dtype):
    for heads, head_dim in itertools.product(range(1, 9), range(1, 161)):
        assert quant.layout_bytes(dtype, heads, head_dim) == packed_bytes(dtype, heads, head_dim)


def test_hand_derived_layouts():
    # One token of K for 8 heads of 128 (1024 elements):
    # fp8 per token-head: 1024 B + 8 fp32 scales = 1024 + 32 = 1056.
    assert quant.layout_bytes("fp8_per_token_head", 8, 128) == 1056
    assert quant.layout_bytes("int8_per_token_head", 8, 128) == 1056
    # mxfp8: 1024 B + 1024/32 = 32 e8m0 bytes = 1056 (same total, scales per block not head).
    assert quant.layout_bytes("mxfp8", 8, 128) == 1056
    # mxfp4: 1024/2 = 512 B + 32 e8m0 bytes = 544; nvfp4: 512 + 1024/16 = 64 -> 576.
    assert quant.layout_bytes("mxfp4", 8, 128) == 544
    assert quant.layout_bytes("nvfp4", 8, 128) == 576
    # fp8_ds_mla (FlashMLA): 512 fp8 + 512/128 = 4 fp32 scales (16 B) + 64 bf16 (128 B) = 656.
    assert quant.ds_mla_bytes(512, 64) == 656
    # DeepSeek-V3.2 indexer key: 128 fp8 + one fp32 scale = 132.
    assert quant.index_k_bytes(128) == 132


def test_fp8_ds_mla_is_mla_only():
    with pytest.raises(ValueError, match="MLA-only"):
        quant.layout_bytes("fp8_ds_mla", 8, 128)


def _kinds():
    """Every dtype on standard attention and on MLA (with and without an index-K cache)."""
    for dtype, heads, head_dim in itertools.product(PER_ELEMENT, (1, 2, 3, 8), (32, 64, 96)):
        yield dtype, LayerKind(attention="full", kv_heads=heads, head_dim=head_dim, dtype=dtype)
    mla_dtypes = (*PER_ELEMENT, "fp8_ds_mla")
    for dtype, rank, index in itertools.product(mla_dtypes, (128, 256, 512), (None, 128, 256)):
        kind = LayerKind(
            attention="full", kv_lora_rank=rank, qk_rope_head_dim=64, index_head_dim=index
        )
        yield dtype, kind.model_copy(update={"dtype": dtype})


def _runtime_kind(kind: LayerKind) -> RuntimeKind:
    return RuntimeKind(
        "full",
        kv_heads=kind.kv_heads or 0,
        head_dim=kind.head_dim or 0,
        kv_lora_rank=kind.kv_lora_rank or 0,
        qk_rope_head_dim=kind.qk_rope_head_dim or 0,
        dtype=kind.dtype or "bf16",
        index_head_dim=kind.index_head_dim or 0,
    )


def _core_bytes(kind: LayerKind, tp: int) -> int:
    """The interpreter's bytes: MLA folded at generate time, heads at call time."""
    if kind.kv_lora_rank is not None:
        return kvgen_shapes.mla_bytes(kind, kind.dtype or "bf16")
    element = sizing_kinds._ELEMENT_CODES[kind.dtype or "bf16"]
    head_dim = kind.head_dim or 0
    dims = (head_dim, kind.v_head_dim or head_dim)
    return sizing_kinds._Full.bytes_per_token(kind.kv_heads or 0, dims, element, 0, tp)


@pytest.mark.parametrize("tp", (1, 2, 4, 8))
def test_costmodel_core_and_shim_agree(tp):
    stack = LayerStack(
        layer_kinds={"g": LayerKind(attention="full", kv_heads=1, head_dim=8)},
        layers={"count": 1, "pattern": ["g"]},
    )
    seen = 0
    for dtype, kind in _kinds():
        static = layers.kind_bytes_per_token(kind, stack, dtype, tp, shape_of=stack)
        buffers = _layers._buffers(_runtime_kind(kind), tp)
        shim = sum(math.prod(shape) * torch_dtype.itemsize for _n, torch_dtype, shape in buffers)
        assert static == shim == _core_bytes(kind, tp), (dtype, kind, tp)
        seen += 1
    assert seen == 9 * 4 * 3 + 10 * 3 * 3


def test_shim_views_carry_their_scales():
    """Each scaled layout is typed buffers the engine would read: elements and scales."""
    pth = _layers._typed("k", "fp8_per_token_head", (4, 128))
    assert [(n, str(d), s) for n, d, s in pth] == [
        ("k", "torch.float8_e4m3fn", (4, 128)),
        ("k_scale", "torch.float32", (4,)),
    ]
    int8 = _layers._typed("v", "int8_per_token_head", (4, 128))
    assert [(n, str(d), s) for n, d, s in int8] == [
        ("v", "torch.int8", (4, 128)),
        ("v_scale", "torch.float32", (4,)),
    ]
    mx4 = _layers._typed("k", "mxfp4", (4, 128))
    assert [(n, s) for n, _d, s in mx4] == [("k", (4, 64)), ("k_scale", (4, 4))]
    assert mx4[1][1].itemsize == 1
    ds = _layers._buffers(
        RuntimeKind(
            "full", kv_lora_rank=512, qk_rope_head_dim=64, dtype="fp8_ds_mla", index_head_dim=128
        ),
        8,
    )
    assert [(n, str(d), s) for n, d, s in ds] == [
        ("latent", "torch.float8_e4m3fn", (512,)),
        ("latent_scale", "torch.float32", (4,)),
        ("rope", "torch.bfloat16", (64,)),
        ("index_k", "torch.float8_e4m3fn", (128,)),
        ("index_k_scale", "torch.float32", (1,)),
    ]
