"""``kvgen plan --mamba-radix-cache-strategy extra_buffer_lazy|extra_buffer_no_overlap|disabled``:
SGLang's Mamba radix cache as a launch command sets it, planned and emitted, and what SGLang
itself made of the emitted flags (tests/fixtures/engines/closed_loop_sglang.json).

Qwen3-Next-80B-A3B, 40 GiB, max_seq_len 8192, page 1 (derivation as in
tests/cli/test_plan_mamba_strategy.py): S = 77,266,944 B a request's state, 24,576 B a token;
with the radix cache on, K = 262 slots and (40 GiB - 263 S) / 24,576 = 920,754 tokens under
every strategy, and one tracking slot (lazy, or the overlap scheduler off) makes the ratio 4:
262 // 4 = 65 requests. With it disabled SGLang keeps max_running_requests slots (kvgen's
first --max-batch-size, as emitted): 64 -> (40 GiB - 65 S) / 24,576 = 1,543,266 tokens,
64 requests; 16 -> (40 GiB - 17 S) / 24,576 = 1,694,178 tokens, 16 requests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_support import _in_repo, run  # noqa: F401  # _in_repo: autouse fixture

REPO = Path(__file__).resolve().parents[2]
QWEN = ("qwen3_next", "qwen3_next_80b_a3b", "--gpu-memory", "40GiB", "--max-seq-len", "8192")
FLAG = "--mamba-radix-cache-strategy"


@pytest.mark.parametrize("strategy", ["extra_buffer_lazy", "extra_buffer_no_overlap"])
def test_plan_runs_a_quarter_of_the_slots_with_one_tracking_slot(capsys, strategy):
    # 65 requests run: 64 of 920,754 // 64 = 14,386 tokens fit (extra_buffer's 52 never do).
    code, out, err = run(capsys, "plan", *QWEN, "--engine", "sglang", "--max-batch-size", "8",
                         "64", FLAG, strategy)  # fmt: skip
    assert code == 0, err
    assert "max concurrent requests of 8192 tokens: 65 (SGLang 0.5.23's maximum concurrency " \
        "65.000)" in out  # fmt: skip
    assert "KV tokens 920,754, blocks 920,754" in out
    assert f"one request per 4 recurrent state slots under mamba_radix_cache_strategy {strategy}" \
        in out  # fmt: skip
    assert "largest max_seq_len for 64 requests: 14386" in out


def test_plan_with_the_radix_cache_disabled_sizes_each_batch_with_its_slots(capsys):
    code, out, err = run(capsys, "plan", *QWEN, "--engine", "sglang", "--max-batch-size", "16",
                         "64", FLAG, "disabled")  # fmt: skip
    assert code == 0, err
    # At the first batch size, 16: 1,694,178 tokens, 16 requests (the slots).
    assert "max concurrent requests of 8192 tokens: 16 (SGLang 0.5.23's maximum concurrency " \
        "16.000)" in out  # fmt: skip
    assert "KV tokens 1,694,178" in out
    assert "one recurrent state slot per max_running_requests with the radix cache disabled" \
        in out  # fmt: skip
    assert "not capped by a batch size" not in out
    # 16 requests of 1,694,178 // 16 = 105,886; 64 of 1,543,266 // 64 = 24,113.
    assert "largest max_seq_len for 16 requests: 105886" in out
    assert "largest max_seq_len for 64 requests: 24113" in out


@pytest.mark.parametrize(
    ("strategy", "fields", "tokens", "running"),
    [
        ("extra_buffer_lazy", {"mamba_radix_cache_strategy": "extra_buffer_lazy"}, 920_754, 65),
        (
            "extra_buffer_no_overlap",
            {"mamba_radix_cache_strategy": "extra_buffer", "disable_overlap_schedule": True},
            920_754,
            65,
        ),
        ("disabled", {"disable_radix_cache": True}, 1_543_266, 64),
    ],
)
def test_emit_writes_the_flags_sglang_resolves_to_the_strategy(
    capsys, strategy, fields, tokens, running
):
    emit = ("plan", *QWEN, "--max-batch-size", "64", "--emit", "sglang")
    code, out, err = run(capsys, *emit, "--format", "json", FLAG, strategy)
    assert code == 0, err
    printed = json.loads(out)
    got = {k: v for k, v in printed["fields"].items()
           if k in ("mamba_radix_cache_strategy", "disable_overlap_schedule",
                    "disable_radix_cache")}  # fmt: skip
    assert got == fields
    assert printed["fields"]["max_total_tokens"] == tokens
    assert printed["capacity"]["max_concurrency"] == running
    # The launcher's flags: SGLang's booleans are bare store_true flags.
    code, out, _ = run(capsys, *emit, "--format", "args", FLAG, strategy)
    assert code == 0
    lines = [line.strip().removesuffix(" \\") for line in out.splitlines()]
    if "disable_radix_cache" in fields:
        assert lines[-1] == "--disable-radix-cache"
        assert not any("--mamba-radix-cache-strategy" in line for line in lines)
    else:
        assert f"--mamba-radix-cache-strategy {fields['mamba_radix_cache_strategy']}" in lines
        assert ("--disable-overlap-schedule" in lines) == ("disable_overlap_schedule" in fields)


@pytest.mark.parametrize("strategy", ["extra_buffer_lazy", "extra_buffer_no_overlap"])
@pytest.mark.parametrize("how", [("--engine", "sglang"), ("--emit", "sglang")])
def test_a_page_the_extra_buffer_refuses_is_a_usage_error(capsys, strategy, how):
    code, out, err = run(capsys, "plan", *QWEN, *how, FLAG, strategy, "--block-size", "96")
    assert code == 2
    assert "does not divide mamba_track_interval 256" in err
    assert out == "" and "Traceback" not in err


def test_sglang_itself_resolved_the_emitted_settings_as_planned():
    # bench/engines/closed_loop_sglang.py: ServerArgs(**emitted fields).resolve_once() and
    # KVCacheConfigurator, max_running_requests 8 (kvgen's default batch).
    golden = json.loads((REPO / "tests/fixtures/engines/closed_loop_sglang.json").read_text())
    by_id = {c["id"]: c["engine"] for c in golden["cases"]}
    stem = "qwen3_next/qwen3_next_80b_a3b"
    lazy = by_id[f"{stem}/p64/s8192/tp1/none/extra_buffer_lazy"]
    assert (lazy["mamba_radix_cache_strategy"], lazy["disable_overlap_schedule"]) == (
        "extra_buffer_lazy",
        False,
    )
    # 262 slots, ratio 4; 920,754 tokens // 64 * 64 = 920,704 at page 64.
    assert (lazy["max_mamba_cache_size"], lazy["mamba_ratio"]) == (262, 4)
    assert lazy["max_total_num_tokens"] == 920_704
    serial = by_id[f"{stem}/p1/s8192/tp1/none/extra_buffer_no_overlap"]
    assert (serial["mamba_radix_cache_strategy"], serial["disable_overlap_schedule"]) == (
        "extra_buffer",
        True,
    )
    assert (serial["mamba_ratio"], serial["max_total_num_tokens"]) == (4, 920_754)
    # Disabled, 8 requests: 8 slots, (40 GiB - 9 S) / 24,576 = 42,254,270,464 / 24,576 =
    # 1,719,330.7 -> 1,719,330 tokens; ratio 1; the overlap scheduler stays on.
    off = by_id[f"{stem}/p1/s8192/tp1/none/disabled"]
    assert off["disable_radix_cache"] is True and off["disable_overlap_schedule"] is False
    assert (off["max_mamba_cache_size"], off["mamba_ratio"]) == (8, 1)
    assert off["max_total_num_tokens"] == ((40 << 30) - 9 * 77_266_944) // 24_576 == 1_719_330
