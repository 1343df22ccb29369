"""``kvgen plan --mamba-radix-cache-strategy``: SGLang's Mamba radix cache on a recurrent hybrid,
planned by ``--engine sglang`` and emitted by ``--emit sglang`` as ``kvgen compare`` plans it.

Qwen3-Next-80B-A3B (generated/qwen3_next, as committed), 40 GiB, max_seq_len 8192, no drafter,
SGLang's page of 1 token. SGLang's goldens (tests/fixtures/engines/closed_loop_sglang.json,
its own KVCacheConfigurator) hold S = 77,266,944 B of state a request (36 GDN layers x (conv
8,192 x 3 rows x 2 B + SSM 32 x 128 x 128 x 4 B)) and 24,576 B a token (12 full layers x 2 x 2
KV heads x 256 x 2 B). The Mamba share is 40 GiB x 0.9 / 1.9 = 20,344,581,928.4 B, so
K = floor(share / S - 1) = floor(263.30 - 1) = 262 state slots, and the tokens are
(40 GiB - 263 S) / 24,576 = 22,628,466,688 / 24,576 = 920,754 under either strategy: the
strategy moves no byte, only the running requests SGLang allows (resolve_max_num_reqs,
slots // ratio): extra_buffer 262 // 5 = 52, no_buffer 262 // 3 = 87, below the tokens'
920,754 / 8,192 = 112.4 requests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_support import _in_repo, run  # noqa: F401  # _in_repo: autouse fixture

REPO = Path(__file__).resolve().parents[2]
QWEN = ("qwen3_next", "qwen3_next_80b_a3b", "--gpu-memory", "40GiB", "--max-seq-len", "8192")
TOKENS = 920_754  # (40 GiB - 263 S) / 24,576, derived above
RUNNING = {"extra_buffer": 262 // 5, "no_buffer": 262 // 3}  # 52, 87


@pytest.mark.parametrize("strategy", ["extra_buffer", "no_buffer"])
def test_plan_sglang_plans_the_strategy_given(capsys, strategy):
    # Largest max_seq_len for B requests: the tokens hold B of L while L <= 920,754 // B, and
    # the slots let B run while B <= slots // ratio: 8 requests fit 920,754 // 8 = 115,094 under
    # both; 64 requests fit 920,754 // 64 = 14,386 under no_buffer (87 run) and never under
    # extra_buffer (52 run).
    flag = () if strategy == "extra_buffer" else ("--mamba-radix-cache-strategy", strategy)
    code, out, err = run(capsys, "plan", *QWEN, "--engine", "sglang", "--max-batch-size", "8",
                         "64", *flag)  # fmt: skip
    assert code == 0, err
    running, ratio = RUNNING[strategy], {"extra_buffer": 5, "no_buffer": 3}[strategy]
    assert (
        f"max concurrent requests of 8192 tokens: {running} (SGLang 0.5.23's maximum "
        f"concurrency {running}.000)" in out
    )
    assert f"KV tokens {TOKENS:,}, blocks {TOKENS:,}" in out
    assert (
        f"SGLang runs at most one request per {ratio} recurrent state slots under "
        f"mamba_radix_cache_strategy {strategy}" in out
    )
    assert "largest max_seq_len for 8 requests: 115094" in out
    fit64 = 14_386 if strategy == "no_buffer" else 0
    assert f"largest max_seq_len for 64 requests: {fit64}" in out
    code, out, _ = run(capsys, "plan", *QWEN, "--engine", "sglang", "--format", "json", *flag)
    data = json.loads(out)
    assert data["mamba_radix_cache_strategy"] == strategy
    assert (data["capacity"]["kv_tokens"], data["capacity"]["max_concurrency"]) == (
        TOKENS,
        float(running),
    )
    assert data["max_requests"] == running


@pytest.mark.parametrize("strategy", ["extra_buffer", "no_buffer"])
def test_plan_and_compare_agree_under_each_strategy(capsys, strategy):
    # compare's SGLang row is checked against SGLang's goldens (tests/unit/test_engines.py:
    # 920,754 tokens, 52.0 and 87.0); plan answers the same from the generated module.
    flag = ("--mamba-radix-cache-strategy", strategy)
    _, out, _ = run(capsys, "compare", *QWEN, "--engine", "sglang", "--format", "json", *flag)
    (row,) = json.loads(out)["engines"]
    _, out, _ = run(capsys, "plan", *QWEN, "--engine", "sglang", "--format", "json", *flag)
    capacity = json.loads(out)["capacity"]
    for key in ("kv_tokens", "max_concurrency", "request_bytes", "num_blocks"):
        assert capacity[key] == row[key]
    assert row["max_concurrency"] == RUNNING[strategy]


def test_plan_strategy_is_not_recorded_where_it_does_not_apply(capsys):
    # An attention-only model has no state slots; vLLM and TensorRT-LLM have no such cache. The
    # flag is accepted and read by SGLang alone, as kvgen compare reads it.
    for argv in (
        ("plan", "llama3", "llama3_1_8b", "--gpu-memory", "40GiB", "--engine", "sglang"),
        ("plan", *QWEN, "--engine", "vllm"),
    ):
        code, out, _ = run(capsys, *argv, "--mamba-radix-cache-strategy", "no_buffer",
                           "--format", "json")  # fmt: skip
        assert code == 0
        assert json.loads(out)["mamba_radix_cache_strategy"] is None


def test_emit_sglang_spells_the_strategy_and_its_running_requests(capsys):
    # --max-batch-size 100: SGLang lowers max_running_requests to slots // ratio (52 or 87);
    # the pool's tokens are the same 920,754. no_buffer comes with the overlap scheduler off,
    # which SGLang requires of a no_buffer given (mamba_hook.py validate_mamba_no_buffer).
    emit = ("plan", *QWEN, "--max-batch-size", "100", "--emit", "sglang", "--format", "json")
    printed = {}
    for strategy in ("extra_buffer", "no_buffer"):
        code, out, err = run(capsys, *emit, "--mamba-radix-cache-strategy", strategy)
        assert code == 0, err
        printed[strategy] = json.loads(out)
        fields = printed[strategy]["fields"]
        assert fields["mamba_radix_cache_strategy"] == strategy
        assert fields["max_total_tokens"] == TOKENS
        assert printed[strategy]["capacity"]["max_concurrency"] == RUNNING[strategy]
        ratio = {"extra_buffer": 5, "no_buffer": 3}[strategy]
        assert any(
            f"lowers max_running_requests to {RUNNING[strategy]}: one running request per "
            f"{ratio} recurrent state slots under {strategy}" in note
            for note in printed[strategy]["notes"]
        )
    assert "disable_overlap_schedule" not in printed["extra_buffer"]["fields"]
    assert printed["no_buffer"]["fields"]["disable_overlap_schedule"] is True
    # Nothing else moves.
    same = {k: v for k, v in printed["no_buffer"]["fields"].items()
            if k not in ("mamba_radix_cache_strategy", "disable_overlap_schedule")}  # fmt: skip
    assert same == {k: v for k, v in printed["extra_buffer"]["fields"].items()
                    if k != "mamba_radix_cache_strategy"}  # fmt: skip
    # The flags spell it for the launcher.
    code, out, _ = run(capsys, *emit[:-2], "--format", "args",
                       "--mamba-radix-cache-strategy", "no_buffer")  # fmt: skip
    assert code == 0
    assert "--mamba-radix-cache-strategy no_buffer" in out
    # SGLang's boolean fields are store_true flags (arg_groups/arg_utils.py): no value follows
    # (its own parser, given these flags, read disable_overlap_schedule True).
    assert out.splitlines()[-1] == "  --disable-overlap-schedule"


def test_emit_from_the_hardware_takes_the_strategy_too(capsys):
    # The --gpu path plans the same launch: its text shows the strategy among the settings.
    code, out, err = run(capsys, "plan", "qwen3_next", "qwen3_next_80b_a3b", "--gpu", "H200",
                         "--weights", "80GiB", "--max-seq-len", "8192", "--emit", "sglang",
                         "--mamba-radix-cache-strategy", "no_buffer")  # fmt: skip
    assert code == 0, err
    assert "--mamba-radix-cache-strategy no_buffer \\\n    --disable-overlap-schedule\n" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--mamba-radix-cache-strategy", "lazy"), "invalid choice: 'lazy'"),
        # SGLang's no_buffer takes page_size 1 only (mamba_hook.py validate_mamba_no_buffer).
        (
            ("--mamba-radix-cache-strategy", "no_buffer", "--block-size", "64"),
            "no_buffer strategy takes page_size 1 only",
        ),
    ],
)
@pytest.mark.parametrize("how", [("--engine", "sglang"), ("--emit", "sglang")])
def test_a_bad_strategy_is_a_usage_error(capsys, argv, message, how):
    code, out, err = run(capsys, "plan", *QWEN, *how, *argv)
    assert code == 2
    assert message in err
    assert out == "" and "Traceback" not in err


def test_the_flag_names_the_engines_strategies():
    from kvgen._cli.commands._knobs import MAMBA_STRATEGIES
    from kvgen.sizing.engines_sglang import SGLANG_MAMBA_STRATEGIES, SGLANG_MAMBA_STRATEGY

    assert MAMBA_STRATEGIES == SGLANG_MAMBA_STRATEGIES
    assert MAMBA_STRATEGIES[0] == SGLANG_MAMBA_STRATEGY


def test_sglang_itself_runs_the_emitted_no_buffer_settings_as_planned(capsys):
    # tests/fixtures/engines/closed_loop_sglang.json: SGLang 0.5.23's ServerArgs.resolve_once
    # and KVCacheConfigurator from the emitted fields alone (bench/engines/closed_loop_sglang.py)
    # kept the given no_buffer with the overlap scheduler off, made the 262 slots and 920,754
    # tokens derived above, and a ratio of 3 (no tracking slots): 87 requests could run.
    golden = json.loads((REPO / "tests/fixtures/engines/closed_loop_sglang.json").read_text())
    wanted = "qwen3_next/qwen3_next_80b_a3b/p1/s8192/tp1/none/no_buffer"
    case = next(c for c in golden["cases"] if c["id"] == wanted)
    got = case["engine"]
    assert (got["mamba_radix_cache_strategy"], got["disable_overlap_schedule"]) == (
        "no_buffer",
        True,
    )
    assert (got["max_mamba_cache_size"], got["mamba_ratio"]) == (262, 3)
    assert got["max_total_num_tokens"] == got["from_memory_alone"]["max_total_num_tokens"] == TOKENS
    code, out, _ = run(capsys, *case["argv"][1:])
    assert code == 0
    printed = json.loads(out)
    assert printed["fields"] == case["fields"]
    assert printed["capacity"]["max_concurrency"] == got["max_mamba_cache_size"] // 3 == 87


def test_plan_sglang_reserves_the_drafters_states_for_its_first_batch_size(capsys):
    # mtp2 (D = 3 draft tokens) under extra_buffer: K = floor((share - 4 S) / (S x (1 + 3/5)))
    # = 162 slots (tests/deploy/test_closed_loop.py derives it from SGLang's golden). SGLang
    # keeps D intermediate states for each of min(max_running_requests, 162 // 5 = 32) + 1
    # requests: at --max-batch-size 64, 33 x 3 x S = 7,649,427,456 B, beside 163 x S =
    # 12,594,511,872 B of slots, leaves (40 GiB - both) / 24,576 = 923,898 tokens; at 8,
    # 9 x 3 x S leaves 1,150,266 (the closed loop's mtp2 case: SGLang's own 1,150,266), whose
    # 8 requests reach 1,150,266 // 8 = 143,783 tokens. --emit sglang and compare, given 64,
    # plan the same 923,898.
    mtp = (*QWEN, "--speculative", "mtp2", "--max-batch-size", "64")
    code, out, err = run(capsys, "plan", *mtp, "8", "--engine", "sglang")
    assert code == 0, err
    assert f"KV tokens {923_898:,}" in out
    assert "largest max_seq_len for 8 requests: 143783" in out
    _, out, _ = run(capsys, "plan", *mtp, "--emit", "sglang", "--format", "json")
    assert json.loads(out)["capacity"]["kv_tokens"] == 923_898
    _, out, _ = run(capsys, "compare", *mtp, "--engine", "sglang", "--format", "json")
    assert json.loads(out)["engines"][0]["kv_tokens"] == 923_898
