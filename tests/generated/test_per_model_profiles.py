"""Per-model speculative profiles (``models:`` on a profile): a profile applies only to the
models it names, in the generic cost model, the generated sizing module, the allocator shim,
the planner and lint. Every number has its hand derivation beside it.

Notation: b = bytes per token of one layer = 2 (K and V) * kv_heads * head_dim * 2 B (bf16).
"""

from __future__ import annotations

import textwrap

import pytest
from kvgen._lint.linter import lint_family
from kvgen._spec.loader import SourceMap, load_family

from tests.reference import costmodel
from tests.sizing_support import Implementation, family_from_text
from tests.workloads import ROOT, render_family

# big:   b = 2 * 8 * 128 * 2 = 4096 per layer, 2 layers -> slope 8192.
# small: b = 2 * 8 * 64 * 2  = 2048 per layer, 2 layers -> slope 4096.
# eagle_big adds one 8 x 128 layer (4096) to big; eagle_small one 8 x 64 layer (2048) to small.
PER_MODEL = """
schema_version: 1
family: permodel
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: big
    max_seq_len: 4096
    layer_kinds: {g: {attention: full, kv_heads: 8, head_dim: 128}}
    layers: {count: 2, pattern: [g]}
  - name: small
    max_seq_len: 4096
    layer_kinds: {g: {attention: full, kv_heads: 8, head_dim: 64}}
    layers: {count: 2, pattern: [g]}
speculative:
  - name: eagle_big
    mode: eagle3
    max_draft_len: 3
    models: [big]
    extra_layers:
      layer_kinds: {e: {attention: full, kv_heads: 8, head_dim: 128}}
      layers: {count: 1, pattern: [e]}
  - name: eagle_small
    mode: eagle3
    max_draft_len: 3
    models: [small]
    extra_layers:
      layer_kinds: {e: {attention: full, kv_heads: 8, head_dim: 64}}
      layers: {count: 1, pattern: [e]}
  - name: ngram4
    mode: ngram
    max_draft_len: 4
"""
KW = {"max_batch_size": 2, "max_num_tokens": 32, "max_seq_len": 4096}
NOT_FOR_SMALL = (
    "speculative 'eagle_big' does not apply to model 'small'; "
    "profiles for small: none, eagle_small, ngram4"
)


@pytest.fixture(params=["generated", "generic"])
def impl(request, tmp_path):
    return Implementation(request.param, PER_MODEL, tmp_path)


def test_profile_applies_to_the_model_it_names(impl):
    # small + eagle_small: slope 2 * 2048 + 2048 = 6144; no SWA layer, so intercept 0.
    assert impl.costs("small", speculative="eagle_small", **KW) == {"target": (6144, 0)}
    # big + eagle_big: 2 * 4096 + 4096 = 12288.
    assert impl.costs("big", speculative="eagle_big", **KW) == {"target": (12288, 0)}
    # A family-wide profile (ngram4, no draft layers) and "none" apply to both.
    assert impl.costs("small", speculative="ngram4", **KW) == {"target": (4096, 0)}
    assert impl.costs("big", **KW) == {"target": (8192, 0)}


def test_profile_raises_for_another_model(impl):
    with pytest.raises(ValueError) as err:
        impl.costs("small", speculative="eagle_big", **KW)
    assert str(err.value) == NOT_FOR_SMALL


def test_every_public_function_of_the_generated_module_refuses(tmp_path):
    sizing = Implementation("generated", PER_MODEL, tmp_path).module
    assert sizing.PROFILES == {
        "big": ("none", "eagle_big", "ngram4"),
        "small": ("none", "eagle_small", "ngram4"),
    }
    assert sizing.SPECULATIVE == ("none", "eagle_big", "eagle_small", "ngram4")
    spec = {"speculative": "eagle_big"}
    calls = [
        lambda: sizing.cache_costs("small", **spec, **KW),
        lambda: sizing.cost_terms("small", **spec, **KW),
        lambda: sizing.quota_from_max_tokens("small", 64, **spec, **KW),
        lambda: sizing.max_tokens_from_quota("small", {"target": 1 << 20}, **spec, **KW),
        lambda: sizing.split_budget("small", 1 << 20, **spec, **KW),
        lambda: sizing.max_blocks_per_seq("small", **spec, max_seq_len=4096),
        lambda: sizing.pages_per_request("small", **spec, max_seq_len=4096),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="does not apply to model 'small'"):
            call()
    # The same question answered for the model it names: T = 64 tokens * 12288 B.
    assert sizing.quota_from_max_tokens("big", 64, **spec, **KW) == {"target": 64 * 12288}


def test_allocator_shim_refuses_and_builds_only_applicable_pairs(tmp_path):
    family = family_from_text(PER_MODEL)
    raw = textwrap.dedent(PER_MODEL).encode()
    rendered = render_family(family, raw, tmp_path, "permodel.yaml")
    shim_cls = rendered.allocator.KVCacheShim
    assert rendered.allocator.PROFILES == rendered.sizing.PROFILES
    with pytest.raises(ValueError) as err:
        shim_cls("small", speculative="eagle_big", max_tokens=64, device="meta", **KW)
    assert str(err.value) == NOT_FOR_SMALL
    # small + eagle_small at T = 64: one "full" pool of ceil(64 / 16) = 4 pages of
    # 16 tokens * (2 * 2048 + 2048) B = 98304 B -> 393216 B = 64 * 6144.
    shim = shim_cls("small", speculative="eagle_small", max_tokens=64, device="meta", **KW)
    assert shim.quota_bytes() == {"target": 64 * 6144}
    assert set(shim.layer_views("extra_layers.0")) == {"k", "v"}
    assert shim.layer_views("extra_layers.0")["k"].shape == (4, 16, 8, 64)


def test_family_helpers_list_applicable_profiles_none_first():
    family = family_from_text(PER_MODEL)
    assert family.profiles_for("big") == ("none", "eagle_big", "ngram4")
    assert family.profiles_for("small") == ("none", "eagle_small", "ngram4")
    assert ("small", "eagle_big") not in family.pairs()
    assert len(family.pairs()) == 6  # 2 models x (none, own eagle, ngram4)
    params = costmodel.RuntimeParams(**KW)
    with pytest.raises(ValueError, match="profiles for big: none, eagle_big, ngram4"):
        costmodel.cache_costs(family, "big", "eagle_small", params)


def test_unknown_model_in_a_profile_is_kv224():
    text = PER_MODEL.replace("models: [small]", "models: [smal]")
    codes = [d.code for d in lint_family("x.yaml", family_from_text(text), SourceMap())]
    assert codes == ["KV224"]
    assert not list(lint_family("x.yaml", family_from_text(PER_MODEL), SourceMap()))


def test_shipped_llama3_eagle3_heads_are_per_model():
    family = load_family(ROOT / "schema" / "families" / "llama3.yaml")
    params = costmodel.RuntimeParams(max_batch_size=1, max_num_tokens=64, max_seq_len=4096)
    # llama3_2_1b: 16 layers * 2 * 8 * 64 * 2 = 32768, plus its 8 x 64 head: 2048 -> 34816.
    cost = costmodel.cache_costs(family, "llama3_2_1b", "eagle3_1b", params)["target"]
    assert cost.slope == 16 * 2048 + 2048 == 34816
    # llama3_1_8b: 32 layers * 2 * 8 * 128 * 2 = 131072, plus its 8 x 128 head: 4096.
    cost = costmodel.cache_costs(family, "llama3_1_8b", "eagle3", params)["target"]
    assert cost.slope == 32 * 4096 + 4096 == 135168
    wanted = "profiles for llama3_2_1b: none, eagle3_1b, eagle3_two_model"
    with pytest.raises(ValueError, match=wanted):
        costmodel.cache_costs(family, "llama3_2_1b", "eagle3", params)
    assert family.profiles_for("llama3_2_3b") == ("none", "eagle3_two_model", "pard4", "ngram4")
