"""``vocab_size`` on a model and on a separate draft: a fact vLLM checks, never a cost.

vLLM 0.33.0 (vllm/config/speculative.py, ``SpeculativeConfig``'s
``verify_equal_vocab_size_if_draft_model``) refuses a "draft_model" drafter whose vocabulary
size differs from the target's; kvgen refuses the pair where the spec gives both sizes, and
answers as before where either is missing."""

from __future__ import annotations

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._spec.loader import load_bytes
from kvgen.sizing.engines_core import NotModelled

GIB = 1 << 30
SPEC = """\
schema_version: 1
family: tiny
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: big
    max_seq_len: 4096
    vocab_size: {target}
    layer_kinds: {{g: {{attention: full, kv_heads: 2, head_dim: 64}}}}
    layers: {{count: 4, pattern: [g]}}
speculative:
  - name: small
    mode: draft_target
    max_draft_len: 4
    draft:
      vocab_size: {draft}
      layer_kinds: {{d: {{attention: full, kv_heads: 1, head_dim: 64}}}}
      layers: {{count: 2, pattern: [d]}}
"""


def _load(target: object, draft: object):
    text = SPEC.format(target=target, draft=draft)
    if target is None:
        text = text.replace("    vocab_size: None\n", "")
    return load_bytes("tiny.yaml", text.encode())


def _vllm(family):
    return engine_capacity(family, "big", GIB, engine="vllm==0.33.0", max_seq_len=4096,
                           max_num_tokens=4096, block_size=16, speculative="small")  # fmt: skip


def test_equal_vocabularies_share_the_pool():
    # 4 layers x 2 (K, V) x 2 heads x 64 x 2 B = 2,048 B plus the draft's 2 x 2 x 1 x 64 x 2 B
    # = 512 B: 2,560 B a token, 40,960 B a 16-token block; 1 GiB / 40,960 = 26,214 blocks.
    got = _vllm(_load(1000, 1000).family)
    assert got.num_blocks == 26214


def test_different_vocabularies_are_refused_with_vllms_rule():
    with pytest.raises(NotModelled, match="verify_equal_vocab_size_if_draft_model") as info:
        _vllm(_load(1001, 1000).family)
    assert info.value.reason == "vllm_draft_vocab"
    assert "vLLM 0.33.0 refuses a draft model whose vocab_size differs" in str(info.value)


def test_a_missing_size_is_not_guessed():
    # Only the draft gives one: nothing to compare, the pool as with equal sizes.
    assert _vllm(_load(None, 1000).family).num_blocks == 26214


@pytest.mark.parametrize(("target", "draft", "line"), [(0, 1000, 8), (1000, 1 << 25, 16)])
def test_a_size_out_of_range_is_a_positioned_schema_error(target, draft, line):
    loaded = _load(target, draft)
    assert loaded.family is None
    (diagnostic,) = [d.render() for d in loaded.diagnostics]
    assert diagnostic.startswith(f"tiny.yaml:{line}:") and "KV104" in diagnostic
    assert "vocab_size" in diagnostic
