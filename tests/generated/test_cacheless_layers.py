"""``attention: none`` layers (MLP-only / MoE-only blocks of hybrids): no cache and no cost,
but they keep their layer index, so pipeline ranks split the model as the engine does.
Every number has its hand derivation beside it.

Notation: b = bytes per token of one layer = 2 (K and V) * kv_heads * head_dim * 2 B (bf16);
with no sliding layer the intercept is B * per_request (recurrent state only).
"""

from __future__ import annotations

import textwrap

import pytest
from kvgen._lint.linter import lint_family
from kvgen._spec.loader import SourceMap

from tests.sizing_support import Implementation, family_from_text
from tests.workloads import render_family

# g: b = 2 * 2 * 16 * 2 = 128 per token; r: 1000 B of state per request; n: nothing.
# Layers 0..5 are g n n g n r.
CACHELESS = """
schema_version: 1
family: cacheless
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      g: {attention: full, kv_heads: 2, head_dim: 16}
      n: {attention: none}
      r: {attention: recurrent, state_bytes: 1000}
    layers: {count: 6, pattern: [g, n, n, g, n, r]}
"""
KW = {"max_batch_size": 4, "max_num_tokens": 32, "max_seq_len": 4096}


@pytest.fixture(params=["generated", "generic"])
def impl(request, tmp_path):
    return Implementation(request.param, CACHELESS, tmp_path)


def test_none_layers_cost_nothing(impl):
    # slope = 2 full layers * 128 = 256; per_request = one recurrent layer = 1000;
    # intercept = (B + 1 reserved state row, docs/cost-model.md §8) * per_request = 5 * 1000
    # (no sliding layer, so no N * ctx term).
    assert impl.costs("m", **KW) == {"target": (256, 5000)}


@pytest.mark.parametrize(
    ("pp_size", "expected"),
    [
        # pp 2: ranks hold layers [0, 3) = g n n and [3, 6) = g n r.
        # (Were the n layers dropped, the 3 cached layers g g r would split [g g] [r]:
        # slopes 256 and 0, which is not where the model's layers live.)
        # The rank with the recurrent layer keeps B + 1 state rows (the padding slot, §8).
        (2, [(128, 0), (128, 5 * 1000)]),
        # pp 3: [0, 2) = g n, [2, 4) = n g, [4, 6) = n r.
        (3, [(128, 0), (128, 0), (0, 5 * 1000)]),
        # pp 6: one layer per rank; ranks 1, 2 and 4 hold a cache-less layer only.
        (6, [(128, 0), (0, 0), (0, 0), (128, 0), (0, 0), (0, 5 * 1000)]),
    ],
)
def test_pipeline_ranks_count_none_layers(impl, pp_size, expected):
    got = [
        impl.costs("m", pp_size=pp_size, pp_rank=rank, **KW)["target"] for rank in range(pp_size)
    ]
    assert got == expected


def test_pp_size_is_bounded_by_every_layer_including_none(impl):
    with pytest.raises(ValueError, match="pp_size must be <= 6 layers"):
        impl.costs("m", pp_size=7, pp_rank=0, **KW)


def test_allocator_has_no_pool_and_no_views_for_none_layers(tmp_path):
    family = family_from_text(CACHELESS)
    rendered = render_family(family, textwrap.dedent(CACHELESS).encode(), tmp_path, "c.yaml")
    shim_cls = rendered.allocator.KVCacheShim
    # Rank 0 of 2 holds layers 0 (g), 1 (n), 2 (n): one "full" pool of T = 32 tokens:
    # ceil(32 / 16) = 2 pages * 16 tokens * 128 B = 4096 B = 32 * 128.
    shim = shim_cls("m", max_tokens=32, pp_size=2, pp_rank=0, device="meta", **KW)
    assert list(shim.managers["target"].pools) == ["full"]
    assert shim.quota_bytes() == {"target": 4096}
    assert shim.layer_views(0)["k"].shape == (2, 16, 2, 16)
    with pytest.raises(KeyError, match=r"'layers\.1' is cache-less \(kind 'n', attention: none\)"):
        shim.layer_views(1)
    with pytest.raises(KeyError, match=r"holds no layer 'layers\.3'"):
        shim.layer_views(3)  # a cached layer, but on the other rank
    # Rank 1 holds 3 (g), 4 (n), 5 (r): the full pool (4096 B) and B = 4 state slots of 1000 B
    # plus the CUDA-graph padding slot (§8).
    shim = shim_cls("m", max_tokens=32, pp_size=2, pp_rank=1, device="meta", **KW)
    assert sorted(shim.managers["target"].pools) == ["full", "state"]
    assert shim.quota_bytes() == {"target": 4096 + (4 + 1) * 1000}
    with pytest.raises(KeyError, match="cache-less"):
        shim.layer_views(4)
    # A rank of cache-less layers only (pp 6, rank 1: layer 1) builds no pool at all.
    shim = shim_cls("m", max_tokens=32, pp_size=6, pp_rank=1, device="meta", **KW)
    assert shim.managers["target"].pools == {}
    assert shim.quota_bytes() == {"target": 0}
    tokens = rendered.sizing.max_tokens_from_quota("m", {"target": 0}, pp_size=6, pp_rank=1, **KW)
    assert tokens == {"target": None}


def test_a_none_kind_with_fields_is_kv225_and_needs_no_shape():
    plain = family_from_text(CACHELESS)
    assert [d.code for d in lint_family("x.yaml", plain, SourceMap())] == []
    text = CACHELESS.replace("n: {attention: none}", "n: {attention: none, window: 64, dtype: fp8}")
    codes = [d.code for d in lint_family("x.yaml", family_from_text(text), SourceMap())]
    # One finding per stray field, and none from window-on-non-sliding-kind (KV203).
    assert codes == ["KV225", "KV225"]
