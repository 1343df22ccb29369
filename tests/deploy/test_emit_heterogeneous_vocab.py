"""``--heterogeneous-vocab``: vLLM's speculative_config use_heterogeneous_vocab, through the CLI.

vLLM 0.33.0 refuses Qwen2.5-0.5B drafting the 7B (vocab_size 151,936 against 152,064) unless
use_heterogeneous_vocab is set (vLLM 0.34.0 has no such setting and refuses it: plain
``vllm`` refuses the flag, tests/unit/test_vllm_releases.py); with it, the draft's layers share
the pool as any draft model's. vLLM's own EngineArgs took the emitted settings and planned the
same blocks (tests/fixtures/engines/closed_loop_vllm.json, the ``heterogeneous_vocab`` cases,
replayed by tests/deploy/test_closed_loop.py).
"""

from __future__ import annotations

import json

from kvgen._cli.main import main

QWEN = ["-q", "plan", "qwen2_5", "qwen2_5_7b", "--gpu-memory", "40GiB", "--max-seq-len", "8192",
        "--block-size", "16", "--speculative", "draft_0_5b"]  # fmt: skip


def test_emit_vllm_writes_use_heterogeneous_vocab_and_the_greedy_note(capsys) -> None:
    # By hand (tests/unit/test_engines_heterogeneous_vocab.py): 28 x 32,768 + 24 x 8,192 =
    # 1,114,112 B a block; 42,949,672,960 // 1,114,112 = 38,550 blocks.
    code = main([*QWEN, "--emit", "vllm==0.33.0", "--format", "json", "--heterogeneous-vocab"])
    out = capsys.readouterr()
    assert code == 0, out.err
    launch = json.loads(out.out)
    assert launch["fields"]["speculative_config"] == {
        "method": "draft_model", "num_speculative_tokens": 4, "use_heterogeneous_vocab": True,
    }  # fmt: skip
    assert launch["fields"]["num_gpu_blocks_override"] == 38_550
    assert launch["capacity"]["kv_tokens"] == 616_800
    assert any("greedy draft sampling only" in note for note in launch["notes"])


def test_without_the_flag_the_pair_is_still_refused(capsys) -> None:
    code = main([*QWEN, "--emit", "vllm", "--format", "json"])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert "verify_equal_vocab_size_if_draft_model" in out.err
    assert "--heterogeneous-vocab" in out.err and "Traceback" not in out.err


def test_plan_engine_vllm_answers_and_says_so(capsys) -> None:
    code = main([*QWEN, "--engine", "vllm==0.33.0", "--heterogeneous-vocab"])
    out = capsys.readouterr().out
    assert code == 0
    # 38,550 blocks x 16 = 616,800 tokens; 38,550 / 512 blocks a request = 75.293.
    assert "KV tokens 616,800, blocks 38,550" in out and "75.293" in out
    assert "use_heterogeneous_vocab (--heterogeneous-vocab)" in out


def test_plain_vllm_is_0_34_0_which_refuses_the_flag(capsys) -> None:
    code = main([*QWEN, "--emit", "vllm", "--heterogeneous-vocab"])
    err = capsys.readouterr().err
    assert code == 2 and "vLLM 0.34.0 refuses heterogeneous_vocab: " in err
    assert "'use_heterogeneous_vocab: Unexpected keyword argument'" in err


def test_the_flag_is_vllms_alone_and_needs_a_draft_model(capsys) -> None:
    for engine, said in (
        (["--engine", "sglang"], "plan it with --engine vllm"),
        (["--emit", "sglang"], "emit it with --emit vllm"),
    ):
        code = main([*QWEN, *engine, "--heterogeneous-vocab"])
        err = capsys.readouterr().err
        assert code == 2 and said in err and "Traceback" not in err
    gemma = ["-q", "plan", "gemma3", "gemma3_27b", "--gpu-memory", "40GiB", "--speculative",
             "ngram4", "--emit", "vllm==0.33.0", "--heterogeneous-vocab"]  # fmt: skip
    code = main(gemma)
    err = capsys.readouterr().err
    assert code == 2 and "only works with method='draft_model'" in err
