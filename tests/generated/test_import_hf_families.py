"""``kvgen import-hf`` on a shipped family's published config.json (tests/fixtures/hf)
reproduces the shipped spec's costs exactly: every model imported with the family's page size
and cache dtype costs what the shipped model costs, in both semantics, at tensor and pipeline
parallel sizes, for every profile the import also writes (MTP from num_nextn_predict_layers).
"""

from __future__ import annotations

import pytest
from kvgen import costmodel
from kvgen.importhf import import_config
from kvgen.loader import load_family

from tests.workloads import ROOT

HF = ROOT / "tests" / "fixtures" / "hf"
FAMILIES = ROOT / "schema" / "families"

# (config fixture, shipped family, shipped model)
CASES = [
    ("deepseek-v3.2-exp.json", "deepseek_v3_2", "deepseek_v3_2_exp"),
    ("kimi-k2-instruct.json", "kimi_k2", "kimi_k2_instruct"),
    ("qwen3-30b-a3b.json", "qwen3_moe", "qwen3_30b_a3b"),
    ("qwen3-235b-a22b.json", "qwen3_moe", "qwen3_235b_a22b"),
    ("qwen3-235b-a22b.json", "qwen3_moe", "qwen3_235b_a22b_fp8_pth"),
]
GRID = [
    {"max_batch_size": 8, "max_num_tokens": 4096, "max_seq_len": 8192},
    {"max_batch_size": 3, "max_num_tokens": 100, "max_seq_len": 32768, "tp_size": 8},
    {"max_batch_size": 2, "max_num_tokens": 512, "max_seq_len": 4096, "pp_size": 4, "pp_rank": 3},
]


@pytest.mark.parametrize(("config", "family_name", "model_name"), CASES, ids=[c[2] for c in CASES])
def test_import_reproduces_the_shipped_costs(tmp_path, config, family_name, model_name):
    shipped = load_family(FAMILIES / f"{family_name}.yaml")
    model = shipped.model(model_name)
    dtype = model.kv_cache_dtype or shipped.kv_cache_dtype
    result = import_config(
        config,
        (HF / config).read_text(encoding="utf-8"),
        family=family_name,
        model=model_name,
        tokens_per_block=shipped.tokens_per_block,
        kv_cache_dtype=None if dtype == "bf16" else dtype,
    )
    assert result.diagnostics == [] and result.text is not None
    path = tmp_path / f"{family_name}.yaml"
    path.write_text(result.text, encoding="utf-8")
    imported = load_family(path)
    profiles = [
        p for p in imported.profiles_for(model_name) if p in shipped.profiles_for(model_name)
    ]
    assert profiles[0] == "none"
    for profile in profiles:
        for params in GRID:
            for semantics in costmodel.SEMANTICS:
                runtime = costmodel.RuntimeParams(semantics=semantics, **params)
                got = costmodel.cache_costs(imported, model_name, profile, runtime)
                want = costmodel.cache_costs(shipped, model_name, profile, runtime)
                assert got == want, (profile, params, semantics)
