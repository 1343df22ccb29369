"""Quantized KV-cache layouts with their scales: bytes per token (docs/cost-model.md §1).

A scaled layout stores its elements packed (``bits`` each) plus scale buffers beside them:

| dtype | elements | scales |
|---|---|---|
| ``nvfp4`` | 4 bits | one FP8 (e4m3) per 16 elements |
| ``mxfp8`` | 8 bits (e4m3) | one e8m0 byte per 32 elements (OCP MX block) |
| ``mxfp4`` | 4 bits (e2m1) | one e8m0 byte per 32 elements (OCP MX block) |
| ``fp8_per_token_head`` | 8 bits | one fp32 per (token, kv head), for K and for V |
| ``int8_per_token_head`` | 8 bits | one fp32 per (token, kv head), for K and for V |
| ``fp8_ds_mla`` | MLA only | see ``ds_mla_bytes`` |

Block scales count over the elements of one token of one K (or V) buffer on a rank,
``ceil(n / block)``: the lint rule scale-block-element-count (KV237) refuses shapes where a
block would straddle two heads, so on every shipped shape the ceiling is exact.

Stdlib only: ``kvgen._model.geometry``, the engine models and import-hf use it. The layouts
themselves are facts (``kvgen.sizing.facts``); the interpreter (``kvgen.sizing.sizing_core``) and
the shim runtime (``kvgen.runtime._layers``) derive the bytes on their own and the test suite checks
all three agree.
"""

from __future__ import annotations

from typing import NamedTuple

from kvgen.sizing.facts import (
    DS_MLA_SCALE_BLOCK,
    DTYPE_BYTES,
    INDEX_SCALE_BLOCK,
    SCALED_LAYOUTS,
    ds_mla_bytes,
    index_k_bytes,
)

__all__ = [
    "DS_MLA_SCALE_BLOCK",
    "INDEX_SCALE_BLOCK",
    "LAYOUTS",
    "ScaledLayout",
    "ds_mla_bytes",
    "element_bytes",
    "index_k_bytes",
    "layout_bytes",
]


class ScaledLayout(NamedTuple):
    """A scaled layout: element width, elements per block scale (0: none) and that scale's
    bytes, fp32 bytes per (token, head) scale (0: none)."""

    bits: int
    block: int
    block_scale_bytes: int
    head_scale_bytes: int


LAYOUTS: dict[str, ScaledLayout] = {
    name: ScaledLayout(*row) for name, row in SCALED_LAYOUTS.items()
}


def layout_bytes(dtype: str, heads: int, head_dim: int) -> int:
    """Bytes of one token of ``heads`` heads of ``head_dim`` elements (one K or V buffer, or
    one MLA latent with heads 1) in ``dtype``, scales included."""
    n = heads * head_dim
    plain = DTYPE_BYTES.get(dtype)
    if plain is not None:
        return n * plain
    layout = LAYOUTS.get(dtype)
    if layout is None:
        raise ValueError(f"{dtype} is not a per-element layout (fp8_ds_mla is MLA-only)")
    bits, block, block_scale, head_scale = layout
    scales = -(-n // block) * block_scale if block else 0
    return -(-n * bits // 8) + scales + heads * head_scale


def element_bytes(dtype: str, elements: int) -> int:
    """Bytes of ``elements`` cache elements of one buffer in ``dtype``, scales included (NVFP4
    packs two per byte plus an FP8 scale per 16)."""
    return layout_bytes(dtype, 1, elements)
