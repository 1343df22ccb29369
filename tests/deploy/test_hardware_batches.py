"""The per-batch-size table in hardware mode (issue 32): ``kvgen plan --gpu ... --weights ...``
prints, for its max_batch_size, the largest max_seq_len that many requests fit in, as
``kvgen plan --gpu-memory KV`` does on the KV budget the hardware leaves (on c2a37ec only the
latter printed it)."""

from __future__ import annotations

import json

import pytest

from tests.cli.cli_support import run

HARDWARE = ("llama3", "llama3_1_8b", "--gpu", "H100-80GB", "--weights", "16GiB")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm-v2"])
def test_hardware_mode_prints_the_table_kv_budget_mode_prints(capsys, engine):
    code, out, err = run(capsys, "plan", *HARDWARE, "--engine", engine, "--format", "json")
    assert code == 0, err
    hardware = json.loads(out)
    budget = f"{hardware['kv_budget']}B"
    code, out, err = run(capsys, "plan", "llama3", "llama3_1_8b", "--engine", engine,
                         "--gpu-memory", budget, "--format", "json")  # fmt: skip
    assert code == 0, err
    given = json.loads(out)
    assert hardware["batches"] == [
        {"max_batch_size": b["max_batch_size"], "max_seq_len_fit": b["max_seq_len_fit"]}
        for b in given["batches"]
    ]
    code, text, _ = run(capsys, "plan", *HARDWARE, "--engine", engine)
    fit = hardware["batches"][0]["max_seq_len_fit"]
    assert f"  largest max_seq_len for 8 requests: {fit}\n" in text


def test_the_vllm_figure_by_hand(capsys):
    # vLLM 0.33.0: H100-80GB 85,520,809,984 B x 0.92, rounded up, - 16 GiB - 4 GiB reserve =
    # 57,204,308,706 B (tests/deploy/test_emit.py); Llama-3.1-8B 131,072 B a token, 16-token
    # blocks of 2,097,152 B: 27,277 blocks; 8 requests hold 27,277 // 8 = 3,409 blocks each:
    # 54,544 tokens.
    code, text, err = run(capsys, "plan", *HARDWARE, "--engine", "vllm==0.33.0")
    assert code == 0, err
    assert "(57204308706 B)" in text
    assert "  largest max_seq_len for 8 requests: 54544\n" in text
    assert 27_277 // 8 * 16 == 54_544
    # vLLM 0.34.0 (plain "vllm"): 85,520,809,984 x 1.0 - 16 GiB - 4 GiB = 64,045,973,504 B;
    # 64-token blocks of 8,388,608 B: 7,634 blocks; 7,634 // 8 = 954 blocks each: 61,056.
    code, text, err = run(capsys, "plan", *HARDWARE, "--engine", "vllm")
    assert code == 0, err
    assert "(64045973504 B)" in text
    assert "  largest max_seq_len for 8 requests: 61056\n" in text
    assert 64_045_973_504 // (64 * 131_072) // 8 * 64 == 61_056
