"""SGLang 0.5.23's refusals name SGLang's own reason (issue 22: no NotModelled row an engine
can answer, and where it cannot, the refusal says why in the engine's terms).

Read in SGLang 0.5.23's source (sglang/srt, the engine venv of bench/engines):
- OpenELM: sglang/srt/models has no OpenELM module and no class registers
  OpenELMForCausalLM (the starting commit said instead that SGLang sizes every layer with one
  head count, which is its pool's rule, not why it cannot run OpenELM).
- Mllama (Llama 3.2 Vision) is answered, not refused: tests/generated/test_cross_attention.py.
- fp8_per_token_head: tests/generated/test_quant_engines.py.
"""

from __future__ import annotations

import importlib
import json

import pytest
from kvgen._engines.capacity import NotModelled, engine_capacity
from kvgen._spec.loader import load_family

from tests.workloads import ROOT

GiB = 1 << 30
KW = {"max_seq_len": 1024, "max_num_tokens": 1024}


def _refusal(family: str, model: str) -> NotModelled:
    spec = load_family(ROOT / "schema" / "families" / f"{family}.yaml")
    with pytest.raises(NotModelled) as info:
        engine_capacity(spec, model, 40 * GiB, engine="sglang", **KW)
    sizing = importlib.import_module(f"generated.{family}.sizing")
    with pytest.raises(sizing.NotModelled) as generated:
        sizing.engine_capacity(model, 40 * GiB, engine="sglang", **KW)
    assert str(generated.value) == str(info.value)
    return info.value


@pytest.mark.parametrize("model", ["openelm_270m", "openelm_450m"])
def test_sglang_names_the_missing_openelm_model_class(model):
    refusal = _refusal("openelm", model)
    assert refusal.reason == "sglang_no_openelm"
    assert "SGLang 0.5.23 cannot run OpenELM" in str(refusal)
    assert "OpenELMForCausalLM" in str(refusal) and "sglang/srt/models" in str(refusal)
    assert "one head count" not in str(refusal)


def _sglang_golden(model: str) -> list[dict]:
    data = json.loads((ROOT / "tests/fixtures/engines/sglang.json").read_text(encoding="utf-8"))
    return [c["engine_output"] for c in data["cases"] if c["inputs"]["model"] == model]


def test_sglang_goldens_hold_its_own_refusals_from_config_json():
    # bench/engines/sglang_runner.py run_config_case on tests/fixtures/hf/openelm-270m.json:
    # no sglang/srt/models module names the architecture.
    (openelm,) = _sglang_golden("openelm_270m")
    assert openelm == {"error": "SGLang 0.5.23 has no model class for ['OpenELMForCausalLM']"}
    # On qwen3-235b-a22b.json with --kv-cache-dtype fp8_per_token_head: SGLang's own check.
    pth = _sglang_golden("qwen3_235b_a22b_fp8_pth")
    assert len(pth) == 2  # pages 16 and 64
    assert all(out["raised_by"] == "configure_kv_cache_dtype" for out in pth)
    assert all(out["error"] == "Unsupported kv_cache_dtype: fp8_per_token_head." for out in pth)
    spec = load_family(ROOT / "schema" / "families" / "qwen3_moe.yaml")
    with pytest.raises(NotModelled, match="configure_kv_cache_dtype"):
        engine_capacity(spec, "qwen3_235b_a22b_fp8_pth", 40 * GiB, engine="sglang", **KW)
