"""Issue 32, "The engines' vocabulary" and "Fractional sizes": kvgen takes the engines' own
launch flags where they mean what kvgen's flag means (one table: ``Settings.flags`` in
kvgen.sizing.engines_registry), token counts as vLLM reads them (``32k``, ``32K``, ``1M``),
fractional sizes rounded down to whole bytes (said on stderr), and refuses the settings vLLM refuses
to start with, in vLLM's words.

Each test fails on c2a37ec: the flags were unknown ("did you mean '--max-num-tokens'?"),
``32k`` and ``36.28GiB`` were usage errors, and ``--max-num-tokens 64 --max-batch-size 128
--emit vllm`` exited 0.

Hand figures, llama3_1_8b (32 layers, 8 KV heads, head_dim 128, bf16): 2 x 32 x 8 x 128 x 2 =
131072 B per token, 65536 B per rank at tp 2; a vLLM page of 16 tokens is 1048576 B per rank.
"""

from __future__ import annotations

import pytest

from tests.cli.cli_support import _in_repo, run  # noqa: F401  # _in_repo: autouse fixture

MODEL = ("llama3", "llama3_1_8b")


# --- the engines' flag names -------------------------------------------------------------

# (the engine's spelling, kvgen's), each with a value that moves the answer
SAME = [
    (["--max-num-seqs", "64"], ["--max-batch-size", "64"]),
    (["--max-running-requests", "64"], ["--max-batch-size", "64"]),
    (["--max_batch_size", "64"], ["--max-batch-size", "64"]),
    (["--max-model-len", "16384"], ["--max-seq-len", "16384"]),
    (["--context-length", "16384"], ["--max-seq-len", "16384"]),
    (["--tensor-parallel-size", "2"], ["--tp-size", "2"]),
    (["-tp", "2"], ["--tp-size", "2"]),
    (["--tp", "2"], ["--tp-size", "2"]),
    (["--max-num-batched-tokens", "4096"], ["--max-num-tokens", "4096"]),
    (["--kv-cache-memory-bytes", "21474836480"], ["--gpu-memory", "20GiB"]),
]


@pytest.mark.parametrize(("theirs", "ours"), SAME, ids=[t[0][0] for t in SAME])
def test_an_engine_flag_plans_as_kvgen_flag(capsys, theirs, ours):
    base = ["plan", *MODEL, "--engine", "vllm"]
    memory = [] if "--gpu-memory" in ours else ["--gpu-memory", "20GiB"]
    code, out, err = run(capsys, *base, *memory, *theirs)
    assert code == 0, err
    assert (code, out) == run(capsys, *base, *memory, *ours)[:2]


def test_max_num_seqs_is_not_taken_for_the_token_budget(capsys):
    code, out, err = run(capsys, "plan", *MODEL, "--gpu-memory", "20GiB", "--max-num-seqs", "64")
    assert code == 0 and "did you mean" not in err
    assert "max_batch_size 64" in out


def test_each_engine_flag_means_one_kvgen_flag():
    from kvgen._cli.main import build_parser
    from kvgen.sizing.engines_registry import ENGINES, engine_flags

    table = engine_flags()
    assert table["--max-num-seqs"] == "--max-batch-size"
    assert table["--kv-cache-memory-bytes"] == "--gpu-memory"
    assert len(table) == sum(len(e.settings.flags) for e in ENGINES)  # no spelling twice
    plan = build_parser(project=False)._subparsers._group_actions[0].choices["plan"]
    dests = {s: a.dest for a in plan._actions for s in a.option_strings}
    for theirs, ours in table.items():
        assert dests[theirs] == dests[ours], theirs


# --- token counts and sizes as people write them -----------------------------------------


@pytest.mark.parametrize(("text", "tokens"), [("32k", 32000), ("32K", 32768), ("16K", 16384)])
def test_token_counts_read_as_vllm_reads_them(capsys, text, tokens):
    # vllm/utils/argparse_utils.py human_readable_int: k = 1000, K = 1024
    code, out, err = run(capsys, "plan", *MODEL, "--gpu-memory", "20GiB", "--max-seq-len", text)
    assert code == 0, err
    assert f"max_seq_len {tokens} (native 131072)" in out


def test_one_m_is_two_to_the_twentieth_tokens(capsys):
    from kvgen._util.units import token_count

    assert token_count("1M") == 1 << 20 and token_count("25.6k") == 25600
    code, _, err = run(capsys, "plan", *MODEL, "--gpu-memory", "20GiB", "--max-seq-len", "1.5K")
    assert code == 2 and "did you mean 1.5k?" in err  # vLLM refuses decimals with K too


def test_a_fractional_budget_is_rounded_down_and_said(capsys):
    # 36.28 GiB = 38955353374.72 B (tests/unit/test_units.py); at tp 2 a page of vLLM 0.33.0's
    # 16 tokens is 1048576 B: 38955353374 // 1048576 = 37150 pages, x 16 = 594400 tokens
    code, out, err = run(
        capsys, "plan", *MODEL, "--engine", "vllm==0.33.0", "--gpu-memory", "36.28GiB",
        "--tp-size", "2",
    )  # fmt: skip
    assert code == 0
    assert "(38955353374 B) per rank" in out and "KV tokens 594,400, blocks 37,150" in out
    assert "36.28GiB is 38955353374.72 B: rounded down to 38955353374 B" in err


def test_fractional_weights_are_rounded_down_and_said(capsys):
    # 3.7 GiB = 3.7 x 1073741824 = 3972844748.8 B
    code, out, _ = run(capsys, "plan", *MODEL, "--gpu", "H100-80GB", "--weights", "3.7GiB")
    assert code == 0
    assert "3.7GiB is 3972844748.80 B: rounded down to 3972844748 B" in out


# --- what vLLM refuses to start with ------------------------------------------------------

VLLM_WORDS = "max_num_batched_tokens (64) must be greater than or equal to max_num_seqs (128)."


def test_a_token_budget_below_the_batch_is_refused_for_vllm(capsys):
    # vllm/config/scheduler.py SchedulerConfig.verify_max_model_len raises these words
    code, out, err = run(
        capsys, "plan", *MODEL, "--gpu", "H100-80GB", "--weights", "16GiB",
        "--max-num-tokens", "64", "--max-batch-size", "128", "--emit", "vllm",
    )  # fmt: skip
    assert code == 2 and out == ""
    assert VLLM_WORDS in err and "give max_num_tokens 128 or more" in err


def test_the_refusal_holds_for_plan_and_compare_and_only_for_vllm(capsys):
    args = ["--gpu-memory", "20GiB", "--max-num-tokens", "64", "--max-batch-size", "128"]
    code, out, _ = run(capsys, "plan", *MODEL, *args, "--engine", "vllm")
    assert code == 1 and VLLM_WORDS in out
    code, out, _ = run(capsys, "compare", *MODEL, *args)
    assert code == 1 and VLLM_WORDS in out
    assert out.count("cannot serve") == 1  # TensorRT-LLM and SGLang take the pair
    code, _, _ = run(capsys, "plan", *MODEL, *args[:-1], "64", "--engine", "vllm")
    assert code == 0  # equal is what vLLM takes
