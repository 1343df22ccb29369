"""``kvgen import-hf`` and quantized cache layouts: DeepSeek-V3.2's index_head_dim becomes
the MLA kind's index-K cache, and a ``--kv-cache-dtype`` layout the config's shape cannot hold
is refused with KV312 at the field it does not fit, writing nothing (docs/cost-model.md §1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._cli.commands import import_hf
from kvgen._cli.main import main
from kvgen._importhf import import_config
from kvgen._spec.models import DTYPES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"


def test_flag_choices_are_the_spec_dtypes():
    assert import_hf.DTYPES == DTYPES


def test_index_head_dim_becomes_the_index_k_cache():
    text = (FIXTURES / "deepseek-v3.2-exp.json").read_text(encoding="utf-8")
    result = import_config("v32.json", text, kv_cache_dtype="fp8_ds_mla", tokens_per_block=64)
    assert result.diagnostics == [] and result.text is not None
    # Once on the model's MLA kind and once on the MTP layer (num_nextn_predict_layers 1).
    assert result.text.count("index_head_dim: 128  # config.json index_head_dim") == 2
    assert "kv_cache_dtype: fp8_ds_mla  # kvgen import-hf --kv-cache-dtype" in result.text


def _config(tmp_path: Path, **fields) -> Path:
    data = json.loads((FIXTURES / "deepseek-v3.2-exp.json").read_text(encoding="utf-8"))
    data.update(fields)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("fixture", "dtype", "field", "why"),
    [
        ("qwen3-30b-a3b.json", "fp8_ds_mla", None, "MLA-only layout"),
        ("nemotron-h-8b.json", "mxfp8", "layer_types", "recurrent states stay plain"),
    ],
)
def test_misfit_layouts_are_refused(tmp_path, capsys, fixture, dtype, field, why):
    out = tmp_path / "spec.yaml"
    code = main(
        ["import-hf", str(FIXTURES / fixture), "--kv-cache-dtype", dtype, "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 1 and not out.exists()
    assert "KV312" in printed and why in printed and f"--kv-cache-dtype {dtype}" in printed
    if field is None:
        assert ":1:1: KV312" in printed  # no field to point at: the file


def test_mx_layouts_need_heads_of_whole_blocks(tmp_path, capsys):
    data = json.loads((FIXTURES / "llama-3.1-8b.json").read_text(encoding="utf-8"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "head_dim": 80}, indent=2), encoding="utf-8")
    assert main(["import-hf", str(path), "--kv-cache-dtype", "mxfp4"]) == 1
    printed = capsys.readouterr().out
    assert "KV312" in printed and "multiple of 32 elements, got 80" in printed
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if '"head_dim"' in t)
    assert f"config.json:{line}:" in printed  # at the head_dim key
    assert main(["import-hf", str(path), "--kv-cache-dtype", "fp8_per_token_head"]) == 0


def test_ds_mla_rank_and_index_blocks_are_checked(tmp_path, capsys):
    rank = _config(tmp_path, kv_lora_rank=500)
    assert main(["import-hf", str(rank), "--kv-cache-dtype", "fp8_ds_mla"]) == 1
    assert "needs kv_lora_rank a multiple of 128, got 500" in capsys.readouterr().out
    index = _config(tmp_path, index_head_dim=100)
    assert main(["import-hf", str(index)]) == 1  # whatever the dtype: the indexer is fp8
    printed = capsys.readouterr().out
    assert "KV312" in printed and "index_head_dim 100 is not a multiple" in printed
