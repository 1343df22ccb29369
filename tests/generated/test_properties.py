"""Property-based diff: random valid specs are rendered, imported and driven by a random
workload; the same static-vs-runtime assertions hold (bounded: 25 examples, derandomized)."""

from __future__ import annotations

import itertools
import random

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes
from kvgen._util.diagnostics import has_errors

from tests.workloads import Harness, max_chunk_beside_generation, random_workload, render_family

MODES = (
    "eagle3",
    "eagle3_two_model",
    "mtp",
    "mtp_eagle",
    "mtp_eagle_two_model",
    "draft_target",
    "draft_target_two_model",
    "pard",
    "dflash",
    "ngram",
)
DRAFT_POOL = {"pard", "dflash", "draft_target"}
EXTRA_LAYERS = {"eagle3", "mtp", "mtp_eagle"}
COUNTER = itertools.count()


@st.composite
def layer_kind(draw, attention, window, tpb):
    kind = {"attention": attention}
    if attention == "none":  # an MLP-only block: no cache, only a layer index
        return kind
    if attention == "recurrent":
        kind["state_bytes"] = draw(st.integers(1, 1 << 14))
        return kind
    if attention == "sliding":
        kind["window"] = window
        kind["sink_tokens"] = draw(st.sampled_from((0, 0, 4, tpb + 3)))
    shape = draw(st.sampled_from(("heads", "heads", "mla", "raw")))
    if shape == "heads":
        kind["kv_heads"] = draw(st.integers(1, 8))
        kind["head_dim"] = draw(st.sampled_from((16, 32, 64)))
    elif shape == "mla":
        kind["kv_lora_rank"] = draw(st.sampled_from((32, 64)))
        kind["qk_rope_head_dim"] = draw(st.sampled_from((0, 16)))
    else:
        kind["bytes_per_token"] = draw(st.integers(1, 300))
    if draw(st.booleans()):
        kind["extra_bytes_per_token"] = draw(st.sampled_from((0, 8, 33)))
    if draw(st.integers(0, 4)) == 0:
        kind["dtype"] = draw(st.sampled_from(("bf16", "fp8", "fp32")))
    return kind


@st.composite
def stack(draw, tpb, max_seq_len, allow_recurrent=True, windows=None):
    attentions = (
        ("full", "sliding", "recurrent", "none") if allow_recurrent else ("full", "sliding")
    )
    chosen = draw(st.lists(st.sampled_from(attentions), min_size=1, max_size=3))
    # Distinct windows per sliding kind (see the report: scratch keys across sink cycles).
    windows = windows or draw(
        st.lists(st.integers(tpb // 2, max_seq_len - 1), min_size=3, max_size=3, unique=True)
    )
    kinds = {
        f"k{i}": draw(layer_kind(attention, windows[i], tpb)) for i, attention in enumerate(chosen)
    }
    names = list(kinds)
    pattern = names + draw(st.lists(st.sampled_from(names), max_size=3))
    return {
        "layer_kinds": kinds,
        "layers": {"count": draw(st.integers(len(pattern), 8)), "pattern": pattern},
    }


@st.composite
def family_spec(draw):
    tpb = draw(st.sampled_from((16, 32, 64)))
    max_seq_len = draw(st.integers(4 * tpb, 1024))
    model = {"name": "m", "max_seq_len": max_seq_len, **draw(stack(tpb, max_seq_len))}
    mode = draw(st.sampled_from(MODES))
    k = draw(st.integers(1, 4))
    profile = {"name": "p", "mode": mode, "max_draft_len": k}
    if mode == "eagle3" and draw(st.booleans()):
        profile["tree_draft_tokens"] = draw(st.integers(k, 8))
    if mode in DRAFT_POOL:
        draft = draw(stack(tpb, max_seq_len, allow_recurrent=False))
        draft["kv_cache_dtype"] = draw(st.sampled_from(("bf16", "fp8")))
        for kind in draft["layer_kinds"].values():
            kind.pop("dtype", None)
        profile["draft"] = draft
    if mode in EXTRA_LAYERS and draw(st.booleans()):
        profile["extra_layers"] = draw(stack(tpb, max_seq_len, allow_recurrent=False))
    return {
        "schema_version": 1,
        "family": f"prop{next(COUNTER)}",
        "tokens_per_block": tpb,
        "kv_cache_dtype": draw(st.sampled_from(("bf16", "fp16", "fp8", "fp32", "nvfp4"))),
        "models": [model],
        "speculative": [profile],
    }


@st.composite
def runtime_params(draw, spec):
    tpb = spec["tokens_per_block"]
    model = spec["models"][0]
    layers = model["layers"]["count"]
    pp_size = draw(st.integers(1, min(2, layers)))
    return {
        "max_batch_size": draw(st.integers(1, 5)),
        "max_num_tokens": draw(st.integers(1, 3 * tpb)),
        "max_seq_len": draw(st.integers(2 * tpb, model["max_seq_len"])),
        "tp_size": draw(st.sampled_from((1, 2, 8))),
        "pp_size": pp_size,
        "pp_rank": draw(st.integers(0, pp_size - 1)),
        "scratch_reuse": draw(st.booleans()),
        "block_reuse": draw(st.booleans()),
        "max_util_for_resume": draw(st.sampled_from((0.5, 0.95, 1.0))),
        "overlap_slack": draw(st.booleans()),
    }


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_specs_keep_runtime_within_static(tmp_path_factory, data):
    spec = data.draw(family_spec())
    raw = yaml.safe_dump(spec, sort_keys=False).encode()
    loaded = load_bytes("prop.yaml", raw)
    assume(loaded.family is not None and not has_errors(lint_loaded(loaded)))
    out = tmp_path_factory.mktemp("prop")
    rendered = render_family(loaded.family, raw, out, "prop.yaml")
    params = data.draw(runtime_params(spec))
    head = rendered.sizing.headroom("p", overlap_slack=params["overlap_slack"])
    shim = rendered.allocator.KVCacheShim(
        "m",
        speculative="p",
        device="meta",
        semantics="exact",
        max_tokens=params["max_batch_size"] * (params["max_seq_len"] + head + 64),
        reserve_pages=2 * params["max_batch_size"] + 2,
        **params,
    )
    harness = Harness(shim, rendered.sizing, params)
    random_workload(harness, random.Random(data.draw(st.integers(0, 1 << 16))), 150)
    max_chunk_beside_generation(harness)
    # Quota: runtime pools built from T cost at least the static quota, by under a page a pool.
    tokens = data.draw(st.integers(0, 4096))
    for semantics in ("trtllm-v2", "exact"):
        static = rendered.sizing.quota_from_max_tokens(
            "m", tokens, speculative="p", semantics=semantics, **params
        )
        built = rendered.allocator.KVCacheShim(
            "m",
            speculative="p",
            device="meta",
            semantics=semantics,
            max_tokens=tokens,
            **params,
        )
        for manager, runtime in built.quota_bytes().items():
            pages = sum(p.page_bytes for p in built.managers[manager].pools.values())
            assert 0 <= runtime - static[manager] <= max(0, pages - 1), (semantics, manager)
