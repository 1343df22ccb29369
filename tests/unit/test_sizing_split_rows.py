"""A split's attention rows as plain ints (``sizing_kinds._Full.per_head``): a new (tp, pp)
sums ``fixed + ceil(kv_heads / tp) * per_head`` per kind instead of calling the kind's class,
so the ints must give the class's own bytes per token (docs/cost-model.md §1: a layer holds
K and V of ceil(kv_heads / tp) heads per token, each head_dim elements of the dtype's bytes).
"""

from __future__ import annotations

import pytest
from kvgen.sizing import sizing_kinds
from kvgen.sizing.facts import SCALED_LAYOUTS

FULL = sizing_kinds._Full
CODES = sizing_kinds._ELEMENT_CODES


@pytest.mark.parametrize(
    ("kv_heads", "dims", "dtype", "fixed", "tp", "per_head", "expected"),
    [
        # Llama-3.1-8B: 8 KV heads x 128, bf16: (128 + 128) * 2 = 512 B a head, 8 * 512.
        (8, (128, 128), "bf16", 0, 1, 512, 4096),
        # tp 16 over 8 KV heads: each rank keeps ceil(8/16) = 1 replicated head.
        (8, (128, 128), "bf16", 0, 16, 512, 512),
        # K 192 / V 128 in fp8 (1 B), 4 heads at tp 3: ceil(4/3) = 2 heads * 320 B.
        (4, (192, 128), "fp8", 0, 3, 320, 640),
        # A raw row (MLA latent, 656 B) with 132 B beside it: no heads, the same at any tp.
        (0, (0, 0), "", 656 + 132, 8, 0, 788),
    ],
)
def test_per_head_ints_give_the_kind_class_bytes_per_token(
    kv_heads, dims, dtype, fixed, tp, per_head, expected
):
    element = CODES.get(dtype, 0)
    assert FULL.per_head(kv_heads, dims, element, fixed) == per_head
    assert fixed + -(-kv_heads // tp) * per_head == expected
    assert FULL.bytes_per_token(kv_heads, dims, element, fixed, tp) == expected


@pytest.mark.parametrize("layout", sorted(SCALED_LAYOUTS))
def test_a_scaled_layout_keeps_its_class_formula(layout):
    # Scales per head or per block round per head: no single per-head int exists (None), so a
    # split calls the class's bytes_per_token for these rows.
    assert FULL.per_head(8, (128, 128), CODES[layout], 0) is None
