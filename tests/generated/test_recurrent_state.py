"""Recurrent state as the engine allocates it (docs/cost-model.md §8): conv and SSM buffers
split by tp with their own dtypes, the reserved rows, and the speculative intermediate states
(default and replay paths), in the static functions, the generic cost model and the shim.

Every number is derived by hand next to its assertion from the shipped specs' dimensions (the
specs cite config.json beside each one)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from kvgen._lint.linter import lint_family
from kvgen._spec.loader import SourceMap, load_bytes, load_family

from tests.reference import costmodel
from tests.sizing_support import family_from_text, import_generated
from tests.workloads import render_family

REPO = Path(__file__).resolve().parents[2]


def generated(family: str, module: str):
    path = REPO / "generated" / family / f"{module}.py"
    if not path.exists():
        pytest.skip("run kvgen generate")
    return import_generated(path, f"_kvgen_recurrent_{family}_{module}")


# Nemotron-H 8B, one Mamba-2 layer at tp=1 (bf16 conv and SSM state):
# conv_dim = 128 * 64 + 2 * 8 * 128 = 10240; conv = 10240 * (4 - 1) * 2 B = 61440;
# SSM = 128 * 64 * 128 * 2 B = 2097152; state = 2158592 (the raw state_bytes it replaced).
NEMO_CONV, NEMO_SSM = 61440, 2097152
NEMO_STATE = NEMO_CONV + NEMO_SSM
NEMO_LAYERS = 24  # "M" in hybrid_override_pattern
NEMO_SLOPE = 4 * 2 * 8 * 128 * 2  # 4 attention layers, 8 KV heads of 128, bf16
# Qwen3-Next 80B-A3B, one Gated DeltaNet layer at tp=1: conv_dim = 32 * 128 + 2 * 16 * 128 =
# 8192; conv = 8192 * 3 * 2 B = 49152; state = 32 * 128 * 128 * 2 B = 1048576.
QWEN_CONV, QWEN_SSM = 49152, 1048576
QWEN_STATE = QWEN_CONV + QWEN_SSM
QWEN_LAYERS = 36  # 48 layers of [linear, linear, linear, full]

NEMO = {"max_batch_size": 8, "max_num_tokens": 512, "max_seq_len": 8192}


def test_nemotron_h_8b_ngram4_names_the_padding_slot_and_the_intermediate_states():
    terms = generated("nemotron_h", "sizing").cost_terms(
        "nemotron_h_8b", speculative="ngram4", **NEMO
    )["target"]
    assert NEMO_STATE == 2158592
    # ngram K = 4: T = K + 1 = 5 intermediate conv windows and SSM states per request and layer.
    assert terms == {
        "slope": NEMO_SLOPE,
        "per_request": NEMO_LAYERS * NEMO_STATE,  # 51806208
        "ctx_swa": 0,
        "state_reserved_rows": 1 * NEMO_LAYERS * NEMO_STATE,  # the CUDA-graph padding slot
        "spec_intermediate_states": 8 * 5 * NEMO_LAYERS * NEMO_STATE,  # 2072248320, ~1.93 GiB
        "intercept": (8 + 1 + 8 * 5) * NEMO_LAYERS * NEMO_STATE,  # 2538504192
    }


def test_nemotron_h_8b_replay_path_keeps_conv_windows_and_a_compact_history():
    terms = generated("nemotron_h", "sizing").cost_terms(
        "nemotron_h_8b", speculative="ngram4", mamba_state_update="replay", **NEMO
    )["target"]
    # Replay: T = 5 intermediate conv windows only; per state slot (B + 1 reserved = 9) a
    # double buffer of max(16, 5) = 16 steps of x (128 * 64) and B (8 * 128) in bf16
    # = 9216 * 2 B = 18432, plus dt and dA_cumsum 2 * 128 * 4 B = 1024: 19456 B a step.
    assert terms["spec_intermediate_states"] == 8 * 5 * NEMO_LAYERS * NEMO_CONV  # 58982400
    assert terms["spec_replay_history"] == 9 * NEMO_LAYERS * 2 * 16 * 19456  # 134479872
    assert terms["intercept"] == (9 * NEMO_LAYERS * NEMO_STATE + 58982400 + 134479872)


def test_qwen3_next_mtp2_intermediate_states_and_attention_dp():
    sizing = generated("qwen3_next", "sizing")
    kw = {"max_batch_size": 4, "max_num_tokens": 1024, "max_seq_len": 65536}
    terms = sizing.cost_terms("qwen3_next_80b_a3b", speculative="mtp2", **kw)["target"]
    # MTP K = 2: T = 3. Slope: 12 full layers + the MTP layer, 2 KV heads of 256, bf16 = 2048.
    assert terms["slope"] == 13 * 2048
    assert terms["state_reserved_rows"] == QWEN_LAYERS * QWEN_STATE  # 39518208
    assert terms["spec_intermediate_states"] == 4 * 3 * QWEN_LAYERS * QWEN_STATE  # 474218496
    # tp=4: 2 KV heads over 4 ranks stay 1 each (replicated), the state splits by 4:
    # conv 8192/4 * 3 * 2 B = 12288, SSM 8 * 128 * 128 * 2 B = 262144.
    tp4 = sizing.cost_terms("qwen3_next_80b_a3b", speculative="mtp2", tp_size=4, **kw)["target"]
    assert tp4["per_request"] == QWEN_LAYERS * (12288 + 262144)
    # attention-DP: every rank holds whole heads and states (tp = 1 for the caches), and one
    # more reserved row for the attention-DP dummy.
    dp = sizing.cost_terms(
        "qwen3_next_80b_a3b", speculative="mtp2", tp_size=4, attention_dp=True, **kw
    )["target"]
    assert dp["per_request"] == QWEN_LAYERS * QWEN_STATE
    assert dp["slope"] == 13 * 2048
    assert dp["state_reserved_rows"] == 2 * QWEN_LAYERS * QWEN_STATE


# Jamba 1.5 Mini, one Mamba-1 layer at tp=1 (bf16): d_inner = 2 * 4096 = 8192 channels;
# conv = 8192 * (4 - 1) * 2 B = 49152; SSM = 8192 * 16 * 2 B = 262144; state = 311296.
JAMBA_CONV, JAMBA_SSM = 49152, 262144
JAMBA_LAYERS = 28  # 32 layers, attention where i % 8 == 4


def test_jamba_mamba1_state_rows_and_intermediate_states():
    terms = generated("jamba", "sizing").cost_terms(
        "jamba_1_5_mini", speculative="ngram4", tp_size=8, **NEMO
    )["target"]
    # tp 8 splits the 8192 channels of both buffers: 1024 * 3 * 2 B + 1024 * 16 * 2 B = 38912
    state = JAMBA_LAYERS * (JAMBA_CONV + JAMBA_SSM) // 8
    assert state == JAMBA_LAYERS * 38912
    assert terms["per_request"] == state
    assert terms["state_reserved_rows"] == state  # the CUDA-graph padding slot
    # ngram K = 4: T = 5 intermediate conv windows and SSM states per request and layer
    assert terms["spec_intermediate_states"] == 8 * 5 * state
    # 4 attention layers * 2 * ceil(8 / 8) KV heads * 128 * 2 B
    assert terms["slope"] == 4 * 2 * 1 * 128 * 2


def test_jamba_tp_that_cannot_split_the_channels_is_a_value_error():
    # d_inner 8192 does not divide by 3 (the engine's divide() asserts the same)
    with pytest.raises(ValueError, match="tp_size 3 does not divide d_inner 8192"):
        generated("jamba", "sizing").cost_terms("jamba_1_5_mini", tp_size=3, **NEMO)


def test_without_speculation_only_the_padding_slot_is_added():
    terms = generated("qwen3_next", "sizing").cost_terms(
        "qwen3_next_80b_a3b", max_batch_size=2, max_num_tokens=64, max_seq_len=4096
    )["target"]
    assert "spec_intermediate_states" not in terms
    assert terms["intercept"] == (2 + 1) * QWEN_LAYERS * QWEN_STATE


def test_tp_that_cannot_split_the_state_is_a_value_error_naming_tp_size():
    sizing = generated("nemotron_h", "sizing")
    # 128 heads and conv_dim 10240 do not divide by 3; attention-DP keeps the state whole.
    with pytest.raises(ValueError, match=r"tp_size 3 does not divide num_heads 128"):
        sizing.cost_terms("nemotron_h_8b", tp_size=3, **NEMO)
    assert sizing.cost_terms("nemotron_h_8b", tp_size=3, attention_dp=True, **NEMO)
    family = load_family(REPO / "schema" / "families" / "nemotron_h.yaml")
    with pytest.raises(ValueError, match=r"tp_size 3 does not divide num_heads 128"):
        costmodel.cache_costs(
            family, "nemotron_h_8b", "none", costmodel.RuntimeParams(8, 512, 8192, tp_size=3)
        )
    shim = generated("nemotron_h", "allocator").KVCacheShim
    with pytest.raises(ValueError, match=r"tp_size 3 does not divide"):
        shim("nemotron_h_8b", max_tokens=64, tp_size=3, device="meta", **NEMO)


@pytest.mark.parametrize("bad", ["fast", 1, None])
def test_mamba_state_update_is_validated(bad):
    with pytest.raises(ValueError, match="mamba_state_update must be one of default, replay"):
        generated("nemotron_h", "sizing").cost_terms(
            "nemotron_h_8b", mamba_state_update=bad, **NEMO
        )


def test_attention_dp_must_be_a_bool():
    with pytest.raises(ValueError, match="attention_dp must be True or False"):
        generated("nemotron_h", "sizing").cost_terms("nemotron_h_8b", attention_dp=1, **NEMO)


GRID = [
    ("nemotron_h", "nemotron_h_8b", "ngram4"),
    ("nemotron_h", "nemotron_h_4b", "none"),
    ("qwen3_next", "qwen3_next_80b_a3b", "mtp2"),
    ("qwen3_next", "qwen3_next_80b_a3b", "ngram4"),
    ("granite4", "granite_4_0_h_tiny", "ngram4"),
    ("jamba", "jamba_1_5_mini", "ngram4"),
    ("jamba", "jamba_1_5_mini", "none"),
]


@pytest.mark.parametrize(("family_name", "model", "profile"), GRID)
@pytest.mark.parametrize("update", ["default", "replay"])
@pytest.mark.parametrize(("attention_dp", "tp_size"), [(False, 1), (False, 8), (True, 4)])
@pytest.mark.parametrize("semantics", ["trtllm-v2", "exact"])
def test_static_state_terms_equal_the_shim_state_pools(
    family_name, model, profile, update, attention_dp, tp_size, semantics
):
    """The diff check for the state pools: the bytes the static terms charge for recurrent
    layers equal the shim's state pools, pool by pool, and the generic model agrees."""
    sizing = generated(family_name, "sizing")
    shim_cls = generated(family_name, "allocator").KVCacheShim
    kw = {
        "speculative": profile,
        "max_batch_size": 5,
        "max_num_tokens": 256,
        "max_seq_len": 4096,
        "tp_size": tp_size,
        "attention_dp": attention_dp,
        "mamba_state_update": update,
        "semantics": semantics,
    }
    terms = sizing.cost_terms(model, **kw)["target"]
    shim = shim_cls(model, max_tokens=1024, device="meta", **kw)
    pools = {name: pool.nbytes for name, pool in shim.managers["target"].pools.items()}
    assert pools["state"] == 5 * terms["per_request"] + terms["state_reserved_rows"]
    spec = terms.get("spec_intermediate_states", 0)
    assert pools.get("state/spec", 0) == spec
    assert pools.get("state/replay", 0) == terms.get("spec_replay_history", 0)
    assert (profile != "none") == (spec > 0)
    family = load_family(REPO / "schema" / "families" / f"{family_name}.yaml")
    params = costmodel.RuntimeParams(
        5, 256, 4096, tp_size=tp_size, attention_dp=attention_dp, mamba_state_update=update,
        semantics=semantics,
    )  # fmt: skip
    cost = costmodel.cache_costs(family, model, profile, params)["target"]
    assert {k: v for k, v in terms.items() if k.startswith(("spec_", "state_"))} == (
        cost.state_terms
    )
    assert cost.intercept == terms["intercept"]


@pytest.mark.parametrize("update", ["default", "replay"])
def test_a_shim_given_the_static_quota_plans_the_same_tokens(update):
    sizing = generated("nemotron_h", "sizing")
    shim_cls = generated("nemotron_h", "allocator").KVCacheShim
    kw = {"speculative": "ngram4", "mamba_state_update": update, "attention_dp": True, **NEMO}
    # 1024 tokens are 16 whole pages of 64: the full pool holds exactly T, no page rounding.
    quota = sizing.quota_from_max_tokens("nemotron_h_8b", 1024, **kw)
    shim = shim_cls("nemotron_h_8b", quota_bytes=quota, device="meta", **kw)
    assert shim.planned_tokens == {"target": 1024}
    assert shim.quota_bytes() == quota
    assert sizing.max_tokens_from_quota("nemotron_h_8b", quota, **kw) == {"target": 1024}


FP32_SSM = """
schema_version: 1
family: fp32ssm
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      g: {attention: full, kv_heads: 2, head_dim: 16}
      s:
        attention: recurrent
        mamba: {num_heads: 8, head_dim: 4, d_state: 16, n_groups: 2, d_conv: 4, ssm_dtype: fp32}
    layers: {count: 4, pattern: [s, s, s, g]}
speculative:
  - {name: ng2, mode: ngram, max_draft_len: 2}
"""


def test_ssm_state_keeps_its_own_dtype(tmp_path):
    family = family_from_text(FP32_SSM)
    rendered = render_family(family, textwrap.dedent(FP32_SSM).encode(), tmp_path, "f.yaml")
    kw = {"max_batch_size": 2, "max_num_tokens": 32, "max_seq_len": 1024}
    terms = rendered.sizing.cost_terms("m", speculative="ng2", **kw)["target"]
    # conv_dim = 8 * 4 + 2 * 2 * 16 = 96; conv 96 * 3 * 2 B (bf16) = 576; SSM 8 * 4 * 16 * 4 B
    # (fp32) = 2048; 3 layers: 3 * 2624 = 7872 per request. ngram K = 2: T = 3.
    assert terms["per_request"] == 7872
    assert terms["state_reserved_rows"] == 7872
    assert terms["spec_intermediate_states"] == 2 * 3 * 7872
    shim_cls = rendered.allocator.KVCacheShim
    shim = shim_cls("m", speculative="ng2", max_tokens=32, device="meta", **kw)
    assert shim.managers["target"].pools["state"].nbytes == (2 + 1) * 7872
    views = shim.layer_views("layers.0")  # 3 slots (B + 1): conv window, then SSM state
    assert views["conv"].shape == (3, 576) and views["ssm"].shape == (3, 2048)


def test_spec_format_and_lint_for_mamba_dimensions():
    plain = family_from_text(FP32_SSM)
    assert [d.code for d in lint_family("x.yaml", plain, SourceMap())] == []
    ungrouped = FP32_SSM.replace("n_groups: 2", "n_groups: 3")
    codes = [d.code for d in lint_family("x.yaml", family_from_text(ungrouped), SourceMap())]
    assert codes == ["KV226"]  # 8 heads do not divide into 3 groups
    both = FP32_SSM.replace("attention: recurrent", "attention: recurrent\n        state_bytes: 9")
    on_full = FP32_SSM.replace(
        "g: {attention: full, kv_heads: 2, head_dim: 16}",
        "g: {attention: full, mamba: {num_heads: 1, head_dim: 1, d_state: 1, n_groups: 1, "
        "d_conv: 2}}",
    )
    refusals = (
        (both, "found state_bytes, mamba"),
        (on_full, "parallel hybrid layer and needs kv_heads"),
    )
    for text, message in refusals:
        loaded = load_bytes("x.yaml", textwrap.dedent(text).encode())
        assert loaded.family is None
        assert any(message in d.render() for d in loaded.diagnostics), message


# Drift (docs/cost-model.md §7 style) for the Mamba-1 state: the shim's state pool against a
# static cost that carries a plausible Mamba-1 mistake. Per request at tp 1, Jamba's 28
# Mamba-1 layers hold 28 * (49152 + 262144) B; the mistakes charge less.
JAMBA_BUGS = {
    # the conv window forgotten: only d_inner x d_state per layer
    "conv_window_forgotten": JAMBA_LAYERS * JAMBA_CONV,
    # mamba_expand forgotten: d_inner = hidden_size 4096, half of both buffers
    "expand_forgotten": JAMBA_LAYERS * (JAMBA_CONV + JAMBA_SSM) // 2,
}


@pytest.mark.parametrize("bug", [None, *JAMBA_BUGS])
def test_mamba1_drift_fails_the_diff(bug):
    from tests.workloads import DiffError, Harness, generate, prefill

    sizing = generated("jamba", "sizing")
    # 40 requests: the conv window (1,376,256 B a request) outgrows what the exact intercept
    # holds beyond the state, the full-attention page rounding (40 * 63 * 16384 B) and the
    # padding row (8,716,288 B), once the whole batch is resident.
    params = {"max_batch_size": 40, "max_num_tokens": 512, "max_seq_len": 512}
    shim = generated("jamba", "allocator").KVCacheShim(
        "jamba_1_5_mini", max_tokens=40 * 600, device="meta", semantics="exact", **params
    )
    h = Harness(shim, sizing, params)
    if bug is not None:
        # every request's state (and the padding row) charged short by the mistake
        terms = h.terms["exact"]["target"]
        short = (params["max_batch_size"] + 1) * JAMBA_BUGS[bug]
        h.cost_override["exact"] = lambda m, t: terms["slope"] * t + terms["intercept"] - short

    def workload() -> None:
        rids = list(range(params["max_batch_size"]))
        for rid in rids:
            h.add(rid)
        prefill(h, dict.fromkeys(rids, 100))
        generate(h, rids, 3, lambda rid, step: 0)

    if bug is None:
        workload()
    else:
        with pytest.raises(DiffError):
            workload()
