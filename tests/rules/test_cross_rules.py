"""The cross-attention lint rules (KV230-KV232) on specs the corpus does not cover: one
cache manager is a model with the extra layers of each profile that applies to it, or a
separate draft pool; kinds the pattern never places are not compared."""

from __future__ import annotations

from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes

HEAD = """schema_version: 1
family: tiny
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: tiny
    max_seq_len: 8192
    layer_kinds:
      g: {attention: full, kv_heads: 2, head_dim: 16}
      x: {attention: cross, kv_heads: 2, head_dim: 16, encoder_tokens: 100}
    layers: {count: 4, pattern: [g, x]}
"""


def codes(text: str) -> list[str]:
    loaded = load_bytes("tiny.yaml", text.encode())
    assert loaded.diagnostics == []
    return [d.code for d in lint_loaded(loaded)]


def test_a_clean_cross_spec():
    assert codes(HEAD) == []


def test_extra_layers_of_the_same_manager_must_agree():
    profile = """speculative:
  - name: eagle
    mode: eagle3
    max_draft_len: 2
    extra_layers:
      layer_kinds: {e: {attention: cross, kv_heads: 2, head_dim: 16, encoder_tokens: 50}}
      layers: {count: 1, pattern: [e]}
"""
    assert codes(HEAD + profile) == ["KV232"]
    # A per-model profile of another model is not this manager: nothing to compare.
    other = HEAD.replace("models:\n", "models:\n  - name: other\n    max_seq_len: 8192\n"
                         "    layer_kinds: {g: {attention: full, kv_heads: 2, head_dim: 16}}\n"
                         "    layers: {count: 2, pattern: [g]}\n", 1)  # fmt: skip
    assert (
        codes(
            other + profile.replace("max_draft_len: 2\n", "max_draft_len: 2\n    models: [other]\n")
        )
        == []
    )


def test_a_separate_draft_pool_is_its_own_manager():
    profile = """speculative:
  - name: pard
    mode: pard
    max_draft_len: 2
    draft:
      layer_kinds:
        d: {attention: full, kv_heads: 1, head_dim: 16}
        x: {attention: cross, kv_heads: 1, head_dim: 16, encoder_tokens: 50}
      layers: {count: 2, pattern: [d, x]}
"""
    assert codes(HEAD + profile) == []  # 50 in the draft, 100 in the target: two managers


def test_an_unplaced_kind_is_not_compared():
    text = HEAD.replace(
        "    layers: {count: 4, pattern: [g, x]}",
        "      y: {attention: cross, kv_heads: 2, head_dim: 16, encoder_tokens: 7}\n"
        "    layers: {count: 2, pattern: [g, x, y]}",
    )
    assert codes(text) == ["KV206", "KV221"]  # y unused and unplaced, never KV232


def test_encoder_tokens_on_a_cacheless_kind_is_kv225_not_kv231():
    text = HEAD.replace("    layers:", "      n: {attention: none, encoder_tokens: 5}\n    layers:")
    text = text.replace("pattern: [g, x]", "pattern: [g, x, n]")
    assert codes(text) == ["KV225"]
