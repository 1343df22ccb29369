"""The linear-attention cache kind (a recurrent kind's ``linear:`` state), on a small spec.

Hand derivation (docs/cost-model.md §8): a linear-attention (lightning) layer keeps one
head_dim x head_dim matrix per head per request and no conv window (vLLM
MambaStateShapeCalculator.linear_attention_state_shape: (heads/tp, head_dim, head_dim)).
The spec below: 8 heads of 16, bf16, 3 linear layers and 1 full layer of 2 KV heads of 16.
  one linear layer, tp 1: 8 * 16 * 16 * 2 B = 4096 B; tp 2: 4 heads, 2048 B
  per request: 3 layers * 4096 = 12288 B (tp 1), 6144 B (tp 2)
  slope: 1 full layer * 2 (K, V) * 2 heads (1 at tp 2) * 16 * 2 B = 128 B/token (64 at tp 2)
"""

from __future__ import annotations

import pytest
from kvgen._engines._layers import stack_layers
from kvgen._lint.linter import lint_family
from kvgen._model.cache_kinds import LinearAttentionKind, spec_kind
from kvgen._spec.loader import load_bytes

from tests.reference import costmodel
from tests.workloads import render_family

SPEC = """\
schema_version: 1
family: lin
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    num_attention_heads: 8
    layer_kinds:
      g: {attention: full, kv_heads: 2, head_dim: 16}
      s:
        attention: {attention}
        linear: {heads}
    layers: {count: 4, pattern: [s, s, s, g]}
"""
STATE = {1: 8 * 16 * 16 * 2, 2: 4 * 16 * 16 * 2}  # one layer's matrices per request
SLOPE = {1: 2 * 2 * 16 * 2, 2: 2 * 1 * 16 * 2}
RUN = {"max_batch_size": 5, "max_num_tokens": 256, "max_seq_len": 4096}


def _spec(attention: str = "recurrent", heads: str = "{num_heads: 8, head_dim: 16}") -> bytes:
    return SPEC.replace("{attention}", attention).replace("{heads}", heads).encode()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    raw = _spec()
    loaded = load_bytes("lin.yaml", raw)
    assert loaded.family is not None
    return render_family(loaded.family, raw, tmp_path_factory.mktemp("lin"), "lin.yaml")


@pytest.mark.parametrize("tp_size", [1, 2])
def test_state_per_request_is_one_matrix_per_head_split_by_tp(rendered, tp_size):
    terms = rendered.sizing.cost_terms("m", tp_size=tp_size, **RUN)["target"]
    assert terms["per_request"] == 3 * STATE[tp_size]
    assert terms["state_reserved_rows"] == 3 * STATE[tp_size]  # the CUDA-graph padding slot
    assert terms["slope"] == SLOPE[tp_size]


@pytest.mark.parametrize("tp_size", [1, 2])
@pytest.mark.parametrize("semantics", ["trtllm-v2", "exact"])
def test_the_shim_allocates_exactly_that_and_the_diff_agrees(rendered, tp_size, semantics):
    kw = {"tp_size": tp_size, "semantics": semantics, **RUN}
    terms = rendered.sizing.cost_terms("m", **kw)["target"]
    shim = rendered.allocator.KVCacheShim("m", max_tokens=1024, device="meta", **kw)
    pool = shim.managers["target"].pools["state"]
    # 5 requests + the padding slot, each slot every linear layer's matrices
    assert pool.nbytes == 6 * 3 * STATE[tp_size]
    assert pool.nbytes == 5 * terms["per_request"] + terms["state_reserved_rows"]
    views = shim.layer_views(0)  # layer 0 is linear: its matrices, no conv window view
    assert set(views) == {"state"}
    assert tuple(views["state"].shape) == (6, STATE[tp_size])
    params = costmodel.RuntimeParams(5, 256, 4096, tp_size=tp_size, semantics=semantics)
    cost = costmodel.cache_costs(rendered.family, "m", "none", params)["target"]
    assert cost.intercept == terms["intercept"]


def test_tp_that_cannot_split_the_heads_names_num_heads(rendered):
    # 8 heads do not divide by 3 (vLLM's LinearAttention asserts num_heads % tp_size == 0)
    message = r"tp_size 3 does not divide num_heads 8"
    with pytest.raises(ValueError, match=message):
        rendered.sizing.cost_terms("m", tp_size=3, **RUN)
    with pytest.raises(ValueError, match=message):
        rendered.allocator.KVCacheShim("m", max_tokens=64, tp_size=3, device="meta", **RUN)
    params = costmodel.RuntimeParams(5, 256, 4096, 3)
    with pytest.raises(ValueError, match=message):
        costmodel.cache_costs(rendered.family, "m", "none", params)


def test_the_static_kind_class_and_its_engine_row(rendered):
    model = rendered.family.model("m")
    kind = model.layer_kinds["s"]
    assert spec_kind(kind) is LinearAttentionKind
    # The engine row is the runtime's, from the kind's table row (written once: its Mamba-2
    # lowering with the form it was given in).
    row = stack_layers(rendered.family, model, model)[0]  # layer 0 is an "s" layer
    assert row.position == 0
    # (mixer, conv channels, conv rows, heads, elements per head, groups, d_state)
    assert row.recurrent == ("linear", 0, 0, 8, 16 * 16, 0, 16)
    assert row.state_bytes == STATE[1]


def test_linear_heads_other_than_the_query_heads_is_kv245_at_its_position():
    loaded = load_bytes("lin.yaml", _spec(heads="{num_heads: 2, head_dim: 16}"))
    assert loaded.family is not None
    found = lint_family("lin.yaml", loaded.family, loaded.source)
    (finding,) = [d for d in found if d.code == "KV245"]
    # line 13 is "        linear: {num_heads: 2, head_dim: 16}": 8 spaces, "linear: {" and
    # "num_heads: " put the value 2 at column 9 + 9 + 11 = 29
    assert (finding.line, finding.col) == (13, 29), finding.render()
    assert "num_heads 2" in finding.message and "num_attention_heads 8" in finding.message


@pytest.mark.parametrize(
    ("attention", "heads", "fragment"),
    [
        ("full", "{num_heads: 8, head_dim: 16}", "needs attention: recurrent"),
        ("recurrent", "{num_heads: 8, head_dim: 16}\n        state_bytes: 64", "exactly one"),
        ("recurrent", "{num_heads: 8}", "head_dim"),
    ],
)
def test_linear_block_misuse_is_a_positioned_schema_error(attention, heads, fragment):
    loaded = load_bytes("lin.yaml", _spec(attention, heads))
    assert loaded.family is None
    assert any(fragment in d.message for d in loaded.diagnostics), [
        d.render() for d in loaded.diagnostics
    ]
    assert all(d.line >= 1 for d in loaded.diagnostics)
