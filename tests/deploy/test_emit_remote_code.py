"""``kvgen plan --emit vllm`` keeps the config fields vLLM would read otherwise than the
checkpoint (kvgen._deploy.remote_code): Ling 2.5 linear's head_dim.

Ling 2.5 linear (generated/ling_linear; its config.json, tests/fixtures/hf/ling-2.5-linear.json,
says head_dim 128 and qk_rope_head_dim 64): vLLM 0.33.0 loads model_type bailing_hybrid through
transformers 5.24.0's BailingHybridConfig unless served with --trust-remote-code, and that
class sets head_dim = qk_rope_head_dim = 64. vLLM's lightning-attention state is
heads x head_dim x head_dim per layer: 32 x 128 x 128 x 2 B = 1,048,576 B as planned, but
32 x 64 x 64 x 2 B = 262,144 B under the rewritten field. The emitted hf_overrides puts 128 back,
as the closed loop (tests/fixtures/engines/closed_loop_vllm.json, vLLM's own EngineArgs from the
emitted fields alone) shows by landing on the planned blocks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._cli.main import main

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def emit(capsys, family, model, *args):
    code = main(["-q", "plan", family, model, "--gpu-memory", "40GiB", "--max-seq-len", "8192",
                 "--emit", "vllm", *args])  # fmt: skip
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ling_linear_emits_the_checkpoints_head_dim_with_the_reason(capsys):
    code, out, err = emit(capsys, "ling_linear", "ling_2_5_linear", "--format", "json")
    assert code == 0, err
    printed = json.loads(out)
    config = json.loads((FIXTURES / "hf" / "ling-2.5-linear.json").read_text())
    assert (
        printed["fields"]["hf_overrides"] == {"head_dim": config["head_dim"]} == {"head_dim": 128}
    )
    (note,) = [n for n in printed["notes"] if n.startswith("hf_overrides")]
    assert "--trust-remote-code" in note and "BailingMoeV2_5ForCausalLM" in note
    assert "head_dim = qk_rope_head_dim" in note
    # vLLM's command line takes the override as JSON.
    code, out, _ = emit(capsys, "ling_linear", "ling_2_5_linear", "--format", "args")
    assert code == 0
    assert "--hf-overrides '{\"head_dim\":128}'" in out
    # The text of the plan shows the settings and the note.
    code, out, _ = emit(capsys, "ling_linear", "ling_2_5_linear")
    assert code == 0
    assert "--hf-overrides" in out and "note: hf_overrides keeps head_dim 128" in out


@pytest.mark.parametrize("tp", ["1", "8"])
def test_the_override_is_the_configs_value_at_every_tp(capsys, tp):
    # head_dim is per head, not per rank: the heads split over tp, the override does not.
    code, out, _ = emit(capsys, "ling_linear", "ling_2_5_linear", "--tp-size", tp,
                        "--format", "json")  # fmt: skip
    assert code == 0
    assert json.loads(out)["fields"]["hf_overrides"] == {"head_dim": 128}


@pytest.mark.parametrize(
    ("family", "model"),
    [("llama3", "llama3_1_8b"), ("qwen3_next", "qwen3_next_80b_a3b"),
     ("kimi_linear", "kimi_linear_48b_a3b")],
)  # fmt: skip
def test_other_architectures_emit_no_override(capsys, family, model):
    # Their configs load as they are saved (a GDN or KDA hybrid has no lightning layers).
    code, out, err = emit(capsys, family, model, "--format", "json")
    assert code == 0, err
    printed = json.loads(out)
    assert "hf_overrides" not in printed["fields"]
    assert not any("trust-remote-code" in note for note in printed["notes"])


def test_the_closed_loop_fed_vllm_the_override_and_got_the_plan():
    # Every Ling case of the vLLM closed loop: the fields vLLM was configured from carry the
    # override (bench/engines/closed_loop_vllm.py adds nothing of its own), and vLLM's blocks
    # are kvgen's (tests/deploy/test_closed_loop.py replays them).
    golden = json.loads((FIXTURES / "engines" / "closed_loop_vllm.json").read_text())
    ling = [c for c in golden["cases"] if c["family"] == "ling_linear" and "engine" in c]
    assert ling
    for case in ling:
        assert case["fields"]["hf_overrides"] == {"head_dim": 128}
        assert case["engine"]["num_blocks"] == case["fields"]["num_gpu_blocks_override"]


def test_the_architectures_are_defined_once():
    from kvgen._deploy.remote_code import LIGHTNING_ARCHITECTURE, REMOTE_CODE_FIELDS, REWRITTEN_BY

    assert set(REWRITTEN_BY) == set(REMOTE_CODE_FIELDS)
    assert LIGHTNING_ARCHITECTURE in REMOTE_CODE_FIELDS
    # The golden runner reads the product's table (by path: it runs where kvgen is not
    # installed), never a copy.
    runner = (REPO / "bench" / "engines" / "vllm_from_config.py").read_text()
    assert 'generator" / "_deploy" / "remote_code.py' in runner
    assert "REMOTE_CODE_FIELDS = {" not in runner
