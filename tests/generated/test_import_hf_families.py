"""``kvgen import-hf`` on a shipped family's published config.json (tests/fixtures/hf)
reproduces the shipped spec's costs exactly (issue 13): every model imported with the family's
page size and cache dtype costs what the shipped model costs, every cost term of every manager
in both semantics, over a grid of batch, chunk and context, tensor- and pipeline-parallel sizes
(every pipeline rank), for every profile the import also writes (MTP from
num_nextn_predict_layers). The fixtures are the published configs' values; the shipped specs
cite the same fields beside every number."""

from __future__ import annotations

import pytest
from kvgen._importhf import import_config
from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes, load_family

from tests.reference import costmodel
from tests.reference.layers import pp_layer_range, stack_layers
from tests.workloads import ROOT

HF = ROOT / "tests" / "fixtures" / "hf"
FAMILIES = ROOT / "schema" / "families"

# (config fixture, shipped family, shipped model)
CASES = [
    ("llama-3.1-8b.json", "llama3", "llama3_1_8b"),
    ("mistral-7b.json", "mistral", "mistral_7b_v0_1"),
    ("gemma-3-27b.json", "gemma3", "gemma3_27b"),
    ("gpt-oss-20b.json", "gpt_oss", "gpt_oss_20b"),
    ("deepseek-v3.json", "deepseek_v3", "deepseek_v3"),
    ("openelm-270m.json", "openelm", "openelm_270m"),
    ("deepseek-v3.2-exp.json", "deepseek_v3_2", "deepseek_v3_2_exp"),
    ("kimi-k2-instruct.json", "kimi_k2", "kimi_k2_instruct"),
    ("qwen3-30b-a3b.json", "qwen3_moe", "qwen3_30b_a3b"),
    ("qwen3-235b-a22b.json", "qwen3_moe", "qwen3_235b_a22b"),
    ("qwen3-235b-a22b.json", "qwen3_moe", "qwen3_235b_a22b_fp8_pth"),
    ("gemma-3n-E2B.json", "gemma3n", "gemma3n_e2b"),
    ("gemma-3n-E4B.json", "gemma3n", "gemma3n_e4b"),
    ("nemotron-h-8b.json", "nemotron_h", "nemotron_h_8b"),
    ("qwen3-next-80b-a3b.json", "qwen3_next", "qwen3_next_80b_a3b"),
    ("granite-4.0-h-tiny.json", "granite4", "granite_4_0_h_tiny"),
    ("jamba-1.5-mini.json", "jamba", "jamba_1_5_mini"),
    ("falcon-h1-0.5b-instruct.json", "falcon_h1", "falcon_h1_0_5b_instruct"),
    ("kimi-linear-48b-a3b-instruct.json", "kimi_linear", "kimi_linear_48b_a3b"),
    ("llama-3.2-11b-vision.json", "llama3_2_vision", "llama3_2_11b_vision"),
    ("llama-4-scout-17b-16e.json", "llama4_scout", "llama4_scout_17b_16e"),
    ("llama-4-maverick-17b-128e.json", "llama4_maverick", "llama4_maverick_17b_128e"),
    ("qwen3-8b.json", "qwen3", "qwen3_8b"),
    ("gemma-2-9b.json", "gemma2", "gemma2_9b"),
]
GRID = [
    {"max_batch_size": b, "max_num_tokens": n, "max_seq_len": s, "tp_size": tp, "pp_size": pp}
    for b, n, s in ((1, 512, 4096), (8, 2048, 32768), (5, 1000, 7777), (3, 8193, 131072))
    for tp, pp in ((1, 1), (8, 1), (2, 2))
]


def _costs(family, model: str, profile: str, params: dict) -> list:
    """Every manager's slope, intercept and exact terms, per semantics and pipeline rank."""
    out = []
    params = {**params, "max_seq_len": min(params["max_seq_len"], family.model(model).max_seq_len)}
    for semantics in costmodel.SEMANTICS:
        for rank in range(params["pp_size"]):
            runtime = costmodel.RuntimeParams(**params, pp_rank=rank, semantics=semantics)
            costs = costmodel.cache_costs(family, model, profile, runtime)
            out.append({name: (c.slope, c.intercept, c.exact_terms) for name, c in costs.items()})
    return out


def _imported(config: str, family_name: str, model_name: str):
    """The spec import-hf writes for the fixture, loaded; it must lint clean."""
    shipped = load_family(FAMILIES / f"{family_name}.yaml")
    model = shipped.model(model_name)
    dtype = model.kv_cache_dtype or shipped.kv_cache_dtype
    result = import_config(
        f"tests/fixtures/hf/{config}",
        (HF / config).read_text(encoding="utf-8"),
        family=family_name,
        model=model_name,
        tokens_per_block=shipped.tokens_per_block,
        kv_cache_dtype=dtype,  # the dtype the family is served in (--kv-cache-dtype)
    )
    assert [d.render() for d in result.diagnostics] == [] and result.text is not None
    loaded = load_bytes(f"{family_name}.yaml", result.text.encode("utf-8"))
    assert loaded.diagnostics == [] and loaded.family is not None
    assert [d.render() for d in lint_loaded(loaded)] == []
    return shipped, loaded.family


@pytest.mark.parametrize(("config", "family_name", "model_name"), CASES, ids=[c[2] for c in CASES])
def test_import_reproduces_the_shipped_costs(config, family_name, model_name):
    shipped, imported = _imported(config, family_name, model_name)
    model = shipped.model(model_name)
    assert imported.model(model_name).max_seq_len == model.max_seq_len
    assert imported.model(model_name).layers.count == model.layers.count
    profiles = [
        p for p in imported.profiles_for(model_name) if p in shipped.profiles_for(model_name)
    ]
    assert profiles[0] == "none"
    for profile in profiles:
        for params in GRID:
            got = _costs(imported, model_name, profile, params)
            assert got == _costs(shipped, model_name, profile, params), (profile, params)


def _layer_shapes(family, model: str, tp: int, pp: int, rank: int) -> list[tuple]:
    """Per cached layer on one rank: index, bytes per token, window, state and its buffers
    (the kind names may differ between the two specs; the layers may not)."""
    stack = family.model(model)
    indices = pp_layer_range(stack.layers.count, pp, rank)
    layers = stack_layers(
        stack, family.kv_cache_dtype, indices, tp_size=tp, max_seq_len=stack.max_seq_len,
        backoff=0, shape_of=stack,
    )  # fmt: skip
    return [
        (lay.index, lay.bytes_per_token, lay.window, lay.state_bytes, lay.mamba) for lay in layers
    ]


@pytest.mark.parametrize(("config", "family_name", "model_name"), CASES, ids=[c[2] for c in CASES])
def test_import_reproduces_the_shipped_layers(config, family_name, model_name):
    shipped, imported = _imported(config, family_name, model_name)
    for tp in (1, 2, 4):
        for pp, rank in ((1, 0), (2, 0), (2, 1)):
            got = _layer_shapes(imported, model_name, tp, pp, rank)
            assert got == _layer_shapes(shipped, model_name, tp, pp, rank), (tp, pp, rank)


def test_import_reproduces_the_encoder_tokens_keyword():
    # Cross-attention: one image tile (1601 tokens) up to four, imported as shipped (§4).
    (case,) = [case for case in CASES if case[1] == "llama3_2_vision"]
    shipped, imported = _imported(*case)
    model = case[2]
    for tokens in (1, 1601, 6404):
        runtime = costmodel.RuntimeParams(8, 8192, 8192, encoder_tokens=tokens)
        ours = costmodel.cache_costs(imported, model, "none", runtime)["target"]
        theirs = costmodel.cache_costs(shipped, model, "none", runtime)["target"]
        assert (ours.slope, ours.intercept) == (theirs.slope, theirs.intercept)
