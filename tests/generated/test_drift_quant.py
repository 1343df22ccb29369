"""Drift regressions for quantized layouts (docs/cost-model.md §1, §7): each plausible way of
charging a scaled layout wrong makes the diff fail when the static side carries it, and the
correct charge passes. Under-charges (scales or an index cache forgotten) run out of pool in a
workload; over-charges (another layout's scale block, an index cache at bf16) reserve memory
the shim never builds, so the page-exact quota no longer equals the shim's."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kvgen._spec.loader import load_family
from kvgen._spec.models import Family, LayerKind, LayerStack

from tests.workloads import FIXTURE_SPECS, DiffError, Harness, aligned_batch_sweep, render_family

SPEC = FIXTURE_SPECS / "fx_quant.yaml"
PARAMS = {"max_batch_size": 4, "max_num_tokens": 64, "max_seq_len": 600}


@pytest.fixture(scope="module")
def family():
    return load_family(SPEC)


@pytest.fixture(scope="module")
def render(tmp_path_factory, family):
    out = tmp_path_factory.mktemp("drift_quant")
    cache: dict = {}

    def get(name: str = "fx_quant", variant: Family | None = None):
        if name not in cache:
            spec = family if variant is None else variant
            cache[name] = render_family(
                spec.model_copy(update={"family": name}), SPEC.read_bytes(), out, SPEC.name
            )
        return cache[name]

    return get


def mistaken(family: Family, kind_fix: Callable[[LayerKind], LayerKind], dtype: str | None):
    """``family`` with every layer kind passed through ``kind_fix`` and, when ``dtype`` is
    given, every pool's fp8_per_token_head / fp8_ds_mla dtype read as ``dtype``."""

    def stack(s: LayerStack) -> dict:
        update: dict = {"layer_kinds": {n: kind_fix(k) for n, k in s.layer_kinds.items()}}
        if dtype is not None and s.kv_cache_dtype in ("fp8_per_token_head", "fp8_ds_mla"):
            update["kv_cache_dtype"] = dtype
        return update

    models = [m.model_copy(update=stack(m)) for m in family.models]
    profiles = [
        p.model_copy(
            update={
                part: getattr(p, part).model_copy(update=stack(getattr(p, part)))
                for part in ("draft", "extra_layers")
                if getattr(p, part) is not None
            }
        )
        for p in family.speculative
    ]
    top = dtype if dtype is not None and family.kv_cache_dtype != "bf16" else None
    update: dict = {"models": models, "speculative": profiles}
    if top is not None:
        update["kv_cache_dtype"] = top
    return family.model_copy(update=update)


def harness(rendered, model, profile, buggy_sizing=None):
    tokens = PARAMS["max_batch_size"] * (PARAMS["max_seq_len"] + 64)
    shim = rendered.allocator.KVCacheShim(
        model, speculative=profile, max_tokens=tokens, device="meta", semantics="exact",
        reserve_pages=4 * PARAMS["max_batch_size"], **PARAMS,
    )  # fmt: skip
    h = Harness(shim, rendered.sizing, PARAMS)
    if buggy_sizing is not None:
        for sem in ("exact", "trtllm-v2"):
            terms = buggy_sizing.cost_terms(model, speculative=profile, semantics=sem, **PARAMS)
            h.cost_override[sem] = lambda m, t, terms=terms: (
                terms[m]["slope"] * t + terms[m]["intercept"]
            )
    return h


def _keep(kind: LayerKind) -> LayerKind:
    return kind


def _no_index(kind: LayerKind) -> LayerKind:
    return kind.model_copy(update={"index_head_dim": None})


def _per_token_head_as_fp8(kind: LayerKind) -> LayerKind:
    return kind.model_copy(update={"dtype": "fp8"}) if kind.dtype == "int8_per_token_head" else kind


# (name, model, profile, kind change, pool dtype read as) of each under-charge.
UNDER = [
    # Scales forgotten: fp8 / int8 per token-head charged as 1 B per element, 8 B per head
    # and layer short per token (K and V fp32 scales).
    ("per_token_head_scales_forgotten", "scaled", "pard2", _per_token_head_as_fp8, "fp8"),
    # fp8_ds_mla charged as a plain fp8 latent: (256 + 32) B instead of 256 + 2 * 4 + 32 * 2.
    ("ds_mla_as_plain_fp8", "sparse_mla", "mtp1", _keep, "fp8"),
    # The DeepSeek-V3.2 indexer's key cache left out: 132 B per token per layer short.
    ("index_k_cache_forgotten", "sparse_mla", "mtp1", _no_index, None),
]


@pytest.mark.parametrize(
    ("name", "model", "profile", "fix", "dtype"), UNDER, ids=[u[0] for u in UNDER]
)
def test_under_charged_layout_runs_out(render, family, name, model, profile, fix, dtype):
    buggy = render(f"fx_quant_{name}", mistaken(family, fix, dtype)).sizing
    rendered = render()
    buggy_slope = buggy.cost_terms(model, speculative=profile, **PARAMS)["target"]["slope"]
    slope = rendered.sizing.cost_terms(model, speculative=profile, **PARAMS)["target"]["slope"]
    assert buggy_slope < slope
    aligned_batch_sweep(harness(rendered, model, profile))
    with pytest.raises(DiffError):
        aligned_batch_sweep(harness(rendered, model, profile, buggy))


def _mx4_as_nvfp4(kind: LayerKind) -> LayerKind:
    return kind.model_copy(update={"dtype": "nvfp4"}) if kind.dtype == "mxfp4" else kind


def _index_at_bf16(kind: LayerKind) -> LayerKind:
    if kind.index_head_dim is None:
        return kind
    return kind.model_copy(update={"index_head_dim": None, "extra_bytes_per_token": 2 * 128})


OVER = [
    # MXFP4 read with NVFP4's block of 16: one scale byte per 16 elements instead of 32.
    ("mx_block_read_as_16", "scaled", "none", _mx4_as_nvfp4),
    # The indexer key charged at bf16 (2 x 128 = 256 B) instead of fp8 + one fp32 (132 B).
    ("index_k_at_bf16", "sparse_mla", "none", _index_at_bf16),
]


@pytest.mark.parametrize(("name", "model", "profile", "fix"), OVER, ids=[o[0] for o in OVER])
def test_over_charged_layout_is_not_the_shims_quota(render, family, name, model, profile, fix):
    buggy = render(f"fx_quant_{name}", mistaken(family, fix, None)).sizing
    rendered = render()
    kw = {"speculative": profile, "semantics": "exact", **PARAMS}
    for tokens in (0, 1, 31, 32, 600, 2400):
        shim = rendered.allocator.KVCacheShim(model, max_tokens=tokens, device="meta", **kw)
        assert rendered.sizing.quota_from_max_tokens(model, tokens, **kw) == shim.quota_bytes()
        if tokens:
            wrong = buggy.quota_from_max_tokens(model, tokens, **kw)
            assert wrong["target"] > shim.quota_bytes()["target"], tokens
