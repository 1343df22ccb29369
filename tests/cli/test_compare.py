"""``kvgen compare``: the side-by-side table of engines, through the real CLI.

Numbers are the ones test_engines.py derives by hand (and the engines' goldens confirm):
gemma3_27b at 40 GiB, max_seq_len 8192, max_num_tokens 8192, page 16.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._cli.main import main

REPO = Path(__file__).resolve().parents[2]
GEMMA = ["compare", str(REPO / "schema" / "families" / "gemma3.yaml"), "gemma3_27b"]
ARGS = ["--gpu-memory", "40GiB", "--max-seq-len", "8192", "--block-size", "16"]


def test_text_table_names_each_difference(capsys: pytest.CaptureFixture[str]) -> None:
    early = ["--engine", "trtllm==early-2026", "vllm", "sglang"]
    assert main([*GEMMA, *ARGS, *early]) == 0
    out = capsys.readouterr().out
    # TensorRT-LLM V2 early-2026: its own split's 5,273 full slots of 16 tokens, 84,368 tokens
    # (derived in tests/unit/test_engines.py); vLLM: 74,773 tokens, 9.128x, 32,768 blocks;
    # SGLang: 42,949,672,960 // (62 x 8,192) = 84,562 -> 84,560 at page 16.
    assert "84,368" in out
    assert "74,773" in out and "9.128" in out and "32,768" in out
    assert "84,560" in out
    # 7 groups of 10 layers, 8 of them padding: 8/70 = 11.4% of every block unused.
    assert "group_padding_layers: 7 groups of 10 layers, 8 of them padding (11.4%" in out
    assert "null_block: one block of 1,310,720 bytes" in out
    # min(1,023 + 2 x 8,192 in flight, S = 8,192) tokens / 16 per block + 1 block = 513.
    assert "swa_in_flight_bound: window 1024: 513 blocks per request" in out
    assert "full_length_layers: 52 sliding layers sized full length" in out


def test_json_has_every_engine_and_its_terms(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*GEMMA, *ARGS, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_engine = {row["engine"]: row for row in data["engines"]}
    assert set(by_engine) == {"trtllm-v2", "vllm", "sglang"}
    assert by_engine["vllm"]["request_bytes"] == 4_705_484_800
    assert by_engine["trtllm-v2"]["max_concurrency"] == 8.0  # capped at max_batch_size 8
    assert [t["name"] for t in by_engine["sglang"]["terms"]] == ["full_length_layers"]


def test_markdown_is_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*GEMMA, *ARGS, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| engine | version | KV tokens | max concurrency | request bytes | blocks |" in out
    # plain vllm is 0.34.0: at block 16 it answers as 0.33.0 did (the releases' capacity
    # arithmetic is one; only the default block differs)
    assert "| vllm | 0.34.0 | 74,773 | 9.128 | 4,705,484,800 | 32,768 |" in out


def test_an_engine_that_cannot_serve_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    # llama3_1_70b at 131,072 tokens needs exactly 40 GiB; vLLM's null block leaves
    # 131,056 tokens (see test_engines.py), so vLLM would refuse to start.
    spec = str(REPO / "schema" / "families" / "llama3.yaml")
    code = main(["compare", spec, "llama3_1_70b", *ARGS[:2], "--max-seq-len", "131072",
                 "--block-size", "16"])  # fmt: skip
    assert code == 1
    assert "cannot serve: budget_bytes 42949672960 cannot hold one request" in (
        capsys.readouterr().out
    )


def test_unknown_model_and_family_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*GEMMA[:2], "gemma3_99b", *ARGS]) == 2
    assert "model must be one of gemma3_1b" in capsys.readouterr().err
    assert main(["compare", str(REPO / "nope.yaml"), "m", *ARGS]) == 2


def test_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "engines.png"
    assert main(["-q", *GEMMA, *ARGS, "--plot", str(target)]) == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_speculative_profile_and_not_modelled_engines(capsys: pytest.CaptureFixture[str]) -> None:
    # gpt_oss_20b + EAGLE3 in vLLM: 12 sliding + 13 full layers -> 2 groups of 13, 1 padding
    # (1/26 = 3.8% of a block). SGLang puts the drafter's full layer in its full pool:
    # 13 x 1,024 + 0.8 x 12 x 1,024 = 23,142.4 B a token, 40 GiB / that = 1,855,886.7 tokens
    # -> 1,855,872 on 16-token pages, / 8,192 = 226.547 requests; nothing is "not modelled".
    spec = str(REPO / "schema" / "families" / "gpt_oss.yaml")
    assert main(["compare", spec, "gpt_oss_20b", *ARGS, "--speculative", "eagle3"]) == 0
    out = capsys.readouterr().out
    assert "group_padding_layers: 2 groups of 13 layers, 1 of them padding (3.8%" in out
    assert "not modelled" not in out
    assert "1,855,872          226.547" in out
    assert main(["compare", spec, "gpt_oss_20b", *ARGS, "--speculative", "pard"]) == 2
    assert "--speculative must be one of none, eagle3, ngram4" in capsys.readouterr().err


def test_sglang_mamba_strategy_moves_a_hybrids_running_requests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Qwen3-Next-80B, 40 GiB, page 1: K = floor(40 GiB x 0.9 / 1.9 / S - 1) = 262 state slots
    # (S = 77,266,944 B; tests/unit/test_engines.py derives it), 920,754 tokens either way.
    # extra_buffer (the default, what an H100/H200 launch resolves) runs 262 // 5 = 52
    # requests; no_buffer 262 // 3 = 87, and the policy term names the strategy.
    args = ["-q", "compare", "qwen3_next", "qwen3_next_80b_a3b", "--gpu-memory", "40GiB",
            "--max-seq-len", "8192", "--engine", "sglang", "--format", "json"]  # fmt: skip
    got = {}
    for strategy in ("extra_buffer", "no_buffer"):
        assert main([*args, "--mamba-radix-cache-strategy", strategy]) == 0
        (row,) = json.loads(capsys.readouterr().out)["engines"]
        terms = {t["name"]: t["detail"] for t in row["terms"]}
        got[strategy] = (row["kv_tokens"], row["max_concurrency"], terms["mamba_running_requests"])
    assert got == {
        "extra_buffer": (
            920_754,
            52.0,
            "at most 1 running request per 5 state slots (extra_buffer)",
        ),
        "no_buffer": (920_754, 87.0, "at most 1 running request per 3 state slots (no_buffer)"),
    }


def test_heterogeneous_vocab_answers_vllms_draft_model_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Issue 22: vLLM with use_heterogeneous_vocab gives gemma3_27b + the 1B draft 77,501 tokens,
    # 9.461 requests (8,659 blocks of 524,288 B a request in 81,920; derived in
    # tests/unit/test_engines_heterogeneous_vocab.py). Without the flag vLLM refuses the pair.
    draft = [*GEMMA, *ARGS, "--speculative", "draft_1b", "--engine", "vllm==0.33.0"]
    assert main(draft) == 0
    assert "verify_equal_vocab_size_if_draft_model" in capsys.readouterr().out
    assert main([*draft, "--heterogeneous-vocab"]) == 0
    out = capsys.readouterr().out
    assert "77,501" in out and "9.461" in out and "81,920" in out
