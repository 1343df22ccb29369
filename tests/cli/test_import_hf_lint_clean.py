"""Issue 18 items 6 and 15: ``kvgen import-hf`` writes only specs that lint clean (and so
generate), or refuses with a positioned KV3xx diagnostic about the config, writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._importhf import import_config
from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes
from kvgen._spec.models import DTYPES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
CONFIGS = sorted(
    p for p in FIXTURES.glob("*.json") if p.stem not in ("contradictory", "unknown-field")
)


def _line_of(path: Path, key: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if f'"{key}"' in t)


def test_jamba_with_an_nvfp4_cache_is_refused(tmp_path, capsys):
    # Jamba's Mamba-1 state would inherit nvfp4, a layout for attention K/V with scales; the
    # engines keep states plain, and the written spec would fail lint (KV239).
    out = tmp_path / "jamba.yaml"
    jamba = FIXTURES / "jamba-1.5-mini.json"
    code = main(["import-hf", str(jamba), "--kv-cache-dtype", "nvfp4", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1 and not out.exists()
    assert "KV312" in printed and "recurrent states stay plain" in printed


@pytest.mark.parametrize(
    ("fixture", "heads", "groups", "value"),
    [
        ("nemotron-h-8b.json", "mamba_num_heads", "n_groups", 3),
        ("qwen3-next-80b-a3b.json", "linear_num_value_heads", "linear_num_key_heads", 12),
    ],
)
def test_ssm_heads_that_do_not_divide_into_groups_are_refused(
    tmp_path, capsys, fixture, heads, groups, value
):
    # Nemotron-H: 128 SSM heads into 3 B/C groups; Qwen3-Next: 32 value heads into 12 key
    # heads. Neither divides, so no engine can split the state (what KV226 refuses in a spec).
    data = json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**data, groups: value}, indent=2), encoding="utf-8")
    out = tmp_path / "spec.yaml"
    assert main(["import-hf", str(config), "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert not out.exists()
    line = _line_of(config, groups)
    assert f"config.json:{line}:3: KV307 {heads} {data[heads]} is not a multiple of" in printed


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_every_import_lints_clean_or_is_refused(config, dtype):
    result = import_config(config.name, config.read_text(encoding="utf-8"), kv_cache_dtype=dtype)
    if result.text is None:
        assert result.diagnostics and all(d.code.startswith("KV3") for d in result.diagnostics)
        assert all(d.path == config.name and d.line >= 1 for d in result.diagnostics)
        return
    loaded = load_bytes("imported.yaml", result.text.encode("utf-8"))
    assert loaded.family is not None, loaded.diagnostics
    assert [d.render() for d in lint_loaded(loaded) if d.severity == "error"] == []
