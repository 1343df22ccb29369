"""Issue 20, "engine everywhere": ``--engine`` and the what-if knobs of ``kvgen plan`` and
``kvgen compare``, sizes with units, engine refusals, truthful exit codes and plot labels.

Every reproducer of the issue is here; each fails on 54a882f / aa9b447 (the flag did not exist,
the answer was TensorRT-LLM's, or the exit code was 0). Figures are derived by hand next to
each test (docs/cost-model.md terms); the shipped specs and generated modules are used.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.cli.cli_support import _in_repo, run  # noqa: F401  # _in_repo: autouse fixture

REPO = Path(__file__).resolve().parents[2]
GiB = 1 << 30


# --- sizes need a unit -------------------------------------------------------------------


@pytest.mark.parametrize("command", ["plan", "compare"])
def test_a_bare_number_is_a_usage_error_with_a_hint(capsys, command):
    code, _, err = run(capsys, command, "llama3", "llama3_1_8b", "--gpu-memory", "80")
    assert code == 2
    assert "size '80' has no unit: did you mean 80GiB?" in err


def test_bytes_with_their_unit_are_accepted(capsys):
    # 85899345920 B = 80 x 2**30 = 80GiB; 80GB = 80 x 10**9.
    _, out_b, _ = run(capsys, "plan", "llama3", "llama3_1_8b", "--gpu-memory", "85899345920B")
    _, out_gib, _ = run(capsys, "plan", "llama3", "llama3_1_8b", "--gpu-memory", "80GiB")
    assert out_b == out_gib and "80 GiB (85899345920 B) per rank" in out_b
    _, out_gb, _ = run(capsys, "plan", "llama3", "llama3_1_8b", "--gpu-memory", "80GB")
    assert "(80000000000 B)" in out_gb


def test_gpu_memory_help_says_kv_budget_per_rank(capsys):
    for command in ("plan", "compare"):
        run(capsys, command, "--help")
    _, out, _ = run(capsys, "plan", "--help")
    assert "KV-cache budget per rank" in " ".join(out.split())
    assert "not the GPU's memory" in " ".join(out.split())


# --- plan --engine -----------------------------------------------------------------------

GEMMA = ("plan", "gemma3", "gemma3_27b", "--gpu-memory", "60GiB", "--tp-size", "8")
GEMMA += ("--max-batch-size", "64", "--max-seq-len", "131072")


def test_plan_default_engine_is_trtllm_and_says_so(capsys):
    code, out, _ = run(capsys, *GEMMA)
    assert code == 0
    assert "engine trtllm-v2 (kvgen's default" in out


def test_plan_engine_vllm_answers_in_vllm_terms(capsys):
    # Gemma-3-27B at tp 8: 16 KV heads -> 2 per rank, head_dim 128, bf16: one layer's K+V
    # per token 2 x 2 x 128 x 2 B = 1024 B. vLLM cuts 10 full + 52 sliding layers into 7
    # groups of 10 layers (8 padding layers); a block of 16 tokens: 10 x 16 x 1024 =
    # 163,840 B. 60 GiB / 163,840 B = 393,216 blocks. One request of 131,072 tokens: the full
    # group 131072/16 = 8,192 blocks; each of 6 sliding groups min(1023 + 2 x 8192, 131072) =
    # 17,407 tokens -> 1,088 blocks + 1 = 1,089. 8,192 + 6 x 1,089 = 14,726 blocks =
    # 2,412,707,840 B; concurrency 393,216 / 14,726 = 26.702 (TensorRT-LLM's plan says 45).
    code, out, _ = run(capsys, *GEMMA, "--engine", "vllm==0.33.0")
    assert code == 0
    assert "engine vllm (--engine): vLLM 0.33.0" in out
    assert (
        "max concurrent requests of 131072 tokens: 26 (vLLM 0.33.0's maximum concurrency 26.702)"
        in out
    )
    assert "blocks 393,216, bytes per request 2,412,707,840" in out
    assert "not capped by a batch size" in out


def test_plan_engine_from_the_project_config(capsys, tmp_path, monkeypatch):
    (tmp_path / "kvgen.toml").write_text('[deployment]\nengine = "vllm"\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, *GEMMA, "--generated", str(REPO / "generated"))
    assert code == 0
    assert "engine vllm (engine of [tool.kvgen.deployment])" in out


def test_plan_engine_vllm_refuses_tp_not_dividing_the_heads(capsys):
    # Llama-3.1-70B: 64 query heads, 8 KV heads; vLLM refuses tp 3 (64 % 3 != 0).
    code, _, err = run(
        capsys, "plan", "llama3", "llama3_1_70b", "--gpu-memory", "20GiB", "--tp-size", "3",
        "--engine", "vllm",
    )  # fmt: skip
    assert code == 2
    assert "refuses tp_size 3" in err and "Traceback" not in err


# --- what-if knobs on plan ---------------------------------------------------------------


def _requests(capsys, *argv):
    code, out, err = run(capsys, "plan", *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)["max_requests"]


def test_plan_kv_cache_dtype_override(capsys):
    # Llama-3.1-70B: 80 layers x 2 x 8 KV heads x 128: bf16 327,680 B/token, fp8 163,840.
    # 20 GiB / 327,680 = 65,536 tokens: 2 requests of 32,768; in fp8 131,072 tokens: 4.
    base = ("llama3", "llama3_1_70b", "--gpu-memory", "20GiB")
    assert _requests(capsys, *base) == 2
    assert _requests(capsys, *base, "--kv-cache-dtype", "fp8") == 4


def test_kv_cache_dtype_refused_where_a_kind_cannot_take_it(capsys):
    # Jamba's Mamba kind inherits the pool dtype: a scaled layout there is KV239's refusal.
    code, _, err = run(
        capsys, "plan", "jamba", "jamba_1_5_mini", "--gpu-memory", "20GiB",
        "--kv-cache-dtype", "mxfp8",
    )  # fmt: skip
    assert code == 2
    assert "KV239" in err and "recurrent state in mxfp8" in err


def test_plan_pp_size_halves_the_layers_per_rank(capsys):
    # pp 2: 40 of the 80 layers per rank -> 163,840 B/token -> 131,072 tokens: 4 requests.
    assert (
        _requests(capsys, "llama3", "llama3_1_70b", "--gpu-memory", "20GiB", "--pp-size", "2") == 4
    )


def test_plan_long_context_needs_rope_scaled(capsys):
    # Qwen3-30B-A3B, native 40,960: 48 layers x 2 x 4 KV heads x 128 x 2 B = 98,304 B/token;
    # 12 GiB / 98,304 = 131,072 tokens: one request of 131,072.
    argv = (
        "plan",
        "qwen3_moe",
        "qwen3_30b_a3b",
        "--gpu-memory",
        "12GiB",
        "--max-seq-len",
        "131072",
    )
    code, _, err = run(capsys, *argv)
    assert code == 2 and "--rope-scaled" in err
    code, out, _ = run(capsys, *argv, "--rope-scaled")
    assert code == 0
    assert "max_seq_len 131072 (native 40960, RoPE-scaled past it (--rope-scaled))" in out
    assert "max concurrent requests of 131072 tokens: 1\n" in out


def test_plan_pp_on_vllm_is_declined_not_ignored(capsys):
    code, _, err = run(*(capsys,), *GEMMA, "--engine", "vllm", "--pp-size", "2")
    assert code == 2 and "--pp-size 2: kvgen's vLLM model sizes one pipeline stage" in err


# --- compare -----------------------------------------------------------------------------

COMPARE = ("compare", "gemma3", "gemma3_27b", "--max-seq-len", "131072")


def test_compare_takes_tp_size(capsys):
    code, out, _ = run(
        capsys, *COMPARE, "--gpu-memory", "60GiB", "--tp-size", "8", "--engine", "vllm==0.33.0"
    )
    assert code == 0, out
    assert "tp_size 8" in out and "26.702" in out  # vLLM 0.33.0's figure derived above


def test_compare_exits_1_when_an_engine_holds_less_than_one_request(capsys):
    # SGLang sizes Gemma-3's 52 sliding layers full length: 62 x 2 x 16 x 128 x 2 B =
    # 507,904 B/token; 60 GiB / 507,904 = 126,843 tokens = 0.968 of one 131,072-token request.
    code, out, _ = run(capsys, *COMPARE, "--gpu-memory", "60GiB")
    assert code == 1
    assert "cannot serve: holds 0.968 of one request of 131072 tokens" in out
    assert "TensorRT-LLM's is capped at --max-batch-size" in out


def test_compare_engine_restricts_the_rows(capsys):
    code, out, _ = run(
        capsys, *COMPARE, "--gpu-memory", "60GiB", "--engine", "vllm", "--format", "json"
    )
    assert code == 0
    assert [row["engine"] for row in json.loads(out)["engines"]] == ["vllm"]


def test_compare_plot_marks_where_vllm_refuses_to_start():
    from kvgen._cli.commands.compare import PLOT_POINTS, engine_curve, load_family
    from kvgen.sizing.engines_registry import release

    # vLLM at tp 1, 131,072 tokens: 14,726 blocks x 1,310,720 B = 19,301,662,720 B per
    # request plus the null block: it refuses any budget below 19,302,973,440 B.
    args = argparse.Namespace(
        block_size=None, max_num_tokens=8192, tp_size=1, max_batch_size=8, speculative="none"
    )
    family = load_family("gemma3")
    budgets = [40 * GiB * (i + 1) // PLOT_POINTS for i in range(PLOT_POINTS)]
    curve = engine_curve(family, "gemma3_27b", args, 131072, release("vllm"), budgets)
    need = 19_301_662_720 + 1_310_720
    assert curve.start is not None and curve.start >= need
    assert budgets[budgets.index(curve.start) - 1] < need
    assert "refuses to start below" in curve.label
    sglang = engine_curve(family, "gemma3_27b", args, 131072, release("sglang"), budgets)
    assert sglang.start is None and "holds < 1 request of 131072 up to 40 GiB" in sglang.label
    # The legend names each line's release as --engine selects it (issue 30).
    assert curve.label.startswith("vllm==0.34.0 (") and sglang.label.startswith("sglang==0.5.23 (")
    older = engine_curve(family, "gemma3_27b", args, 131072, release("vllm==0.33.0"), budgets)
    assert older.label.startswith("vllm==0.33.0 (")


def test_plan_trtllm_refuses_tp_not_dividing_the_query_heads(capsys):
    # Gemma-3-27B: 32 query heads, 16 KV heads. TensorRT-LLM's attention module asserts
    # num_heads % tp_size == 0 (KV heads are replicated up to tp instead): tp 3 is refused,
    # tp 32 (KV heads replicated 2x) is not.
    argv = ("plan", "gemma3", "gemma3_27b", "--gpu-memory", "20GiB", "--tp-size")
    code, _, err = run(capsys, *argv, "3")
    assert code == 2
    assert "TensorRT-LLM refuses tp_size 3: the model's 32 query heads must divide by it" in err
    code, _, _ = run(capsys, *argv, "32")
    assert code == 0


def test_compare_pp_size_reports_trtllm_tightest_rank(capsys):
    # Llama-3.1-70B at pp 2: 40 of 80 layers per rank, 40 x 2 x 8 x 128 x 2 B = 163,840
    # B/token; 20 GiB / 163,840 = 131,072 tokens = 4 requests of 32,768 (both ranks alike).
    # vLLM and SGLang have no pipeline model here: n/a with the reason, never a tp-1 figure.
    code, out, _ = run(
        capsys, "compare", "llama3", "llama3_1_70b", "--gpu-memory", "20GiB", "--pp-size", "2",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    rows = {row["engine"]: row for row in json.loads(out)["engines"]}
    assert rows["trtllm-v2"]["kv_tokens"] == 131072
    assert rows["trtllm-v2"]["max_concurrency"] == 4.0
    assert "pipeline parallelism is not modelled" in rows["vllm"]["not_modelled"]
    assert rows["vllm"]["terms"] == []


def test_engine_names_come_from_the_registry_and_dtypes_agree_everywhere():
    from kvgen._cli.commands._knobs import ENGINES as FLAGS
    from kvgen._cli.commands._knobs import KV_DTYPES
    from kvgen._engines.capacity import ENGINES as LABELS
    from kvgen._spec.models import DTYPES
    from kvgen.sizing import engines_registry

    assert FLAGS == engines_registry.engine_names() == ("trtllm", "vllm", "sglang", "trtllm-v2")
    assert tuple(engine.label for engine in engines_registry.ENGINES) == LABELS
    assert sorted(KV_DTYPES) == sorted(DTYPES) and len(KV_DTYPES) == len(DTYPES)


def test_config_engine_must_be_an_engine(capsys, tmp_path, monkeypatch):
    (tmp_path / "kvgen.toml").write_text('[deployment]\nengine = "vllmm"\n')
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *GEMMA)
    assert code == 2
    assert "engine must be one of trtllm, vllm, sglang" in err and "did you mean 'vllm'" in err


def test_compare_kv_cache_dtype_and_rope_scaled(capsys):
    # Qwen3-30B-A3B in fp8 at 131,072 tokens (RoPE-scaled past 40,960): 48 x 2 x 4 x 128 x 1 B
    # = 49,152 B/token; TensorRT-LLM V2 holds 6 GiB / 49,152 = 131,072 tokens: 1 request.
    argv = ("compare", "qwen3_moe", "qwen3_30b_a3b", "--gpu-memory", "6GiB")
    argv += ("--max-seq-len", "131072", "--kv-cache-dtype", "fp8", "--format", "json")
    code, _, err = run(capsys, *argv)
    assert code == 2 and "--rope-scaled" in err
    code, out, _ = run(capsys, *argv, "--rope-scaled", "--engine", "trtllm-v2")
    data = json.loads(out)
    assert code == 0 and data["rope_scaled"] and data["kv_cache_dtype"] == "fp8"
    assert data["engines"][0]["kv_tokens"] == 131072


def test_compare_plot_legend_says_where_each_engine_refuses(capsys, tmp_path, monkeypatch):
    # At 40 GiB and 131,072 tokens (tp 1): vLLM starts from 19,302,973,440 B (above), SGLang
    # never holds one request (507,904 B/token x 131,072 = 62 GiB > 40 GiB): each engine is
    # labelled with why and where, with an x on the axis, none silently dropped.
    pytest.importorskip("matplotlib")
    import kvgen._util.files

    legends: list[list[str]] = []
    markers: list[int] = []

    def capture(fig, path, **_):
        ax = fig.axes[0]
        legends.append([t.get_text() for t in ax.get_legend().get_texts()])
        markers.append(sum(1 for line in ax.get_lines() if line.get_marker() == "x"))

    monkeypatch.setattr(kvgen._util.files, "save_figure", capture)
    code, _, _ = run(capsys, *COMPARE, "--gpu-memory", "40GiB", "--plot", str(tmp_path / "p.png"),
                     "--engine", "trtllm==early-2026", "vllm", "sglang")  # fmt: skip
    assert code == 1  # SGLang cannot hold one request at 40 GiB
    (labels,) = legends
    # TensorRT-LLM V2 early-2026 (tpb 64, B 8, N 8192) starts at any budget, but its own split of
    # the quota (two pool groups: 52 sliding layers' 27,262,976 B slots, 10 full layers' 5,242,880
    # B, the full group's ratio 5/31) never leaves the full pool 131,072 / 64 = 2,048 slots:
    # at 40 GiB (1,280 grains of 32 MiB) it gets round(1,280 x 5/31) = 206 grains = 6,592 MiB
    # / 5 MiB = 1,318 slots, 84,352 tokens. vLLM's first point: 22 x 40/48 = 18.33 GiB.
    # Each legend entry names its release as --engine selects it (issue 30).
    assert labels[0] == "trtllm==early-2026 (holds < 1 request of 131072 up to 40 GiB)"
    assert labels[1] == "vllm==0.34.0 (refuses to start below 18.33 GiB, x)"
    assert labels[2] == "sglang==0.5.23 (holds < 1 request of 131072 up to 40 GiB)"
    assert len(labels) == 3  # the engine's pools are the trtllm-v2 line itself
    assert markers == [3]


def test_plan_vllm_budget_below_one_request_exits_1_with_vllms_words(capsys):
    # vLLM at tp 1 needs 19,301,662,720 B for one 131,072-token request plus a null block of
    # 1,310,720 B (derived in test_compare_plot_marks_where_vllm_refuses_to_start): 10 GiB
    # (10,737,418,240 B) is refused at start, no figures invented.
    argv = ("plan", "gemma3", "gemma3_27b", "--gpu-memory", "10GiB", "--max-seq-len", "131072")
    code, out, _ = run(capsys, *argv, "--engine", "vllm==0.33.0")
    assert code == 1
    assert "max concurrent requests of 131072 tokens: 0\n" in out
    assert "vLLM 0.33.0 would refuse to start: budget_bytes 10737418240 cannot hold" in out
    assert "KV tokens" not in out


@pytest.mark.parametrize("engine", [[], ["--engine", "trtllm-v2"], ["--engine", "vllm"]])
def test_issue_tp_3_on_llama_70b_is_refused_by_every_engine_that_refuses_it(capsys, engine):
    # The issue's case: Llama-3.1-70B (64 query heads, 8 KV heads) at tp 3. TensorRT-LLM
    # asserts 64 % 3 == 0 (fails); vLLM checks the query heads first (ModelConfig), too.
    code, _, err = run(
        capsys, "plan", "llama3", "llama3_1_70b", "--gpu-memory", "20GiB", "--tp-size", "3",
        *engine,
    )  # fmt: skip
    assert code == 2
    assert "refuses tp_size 3: the model's 64 query heads must divide by it" in err


def test_plan_requests_with_a_dtype_override_says_so(capsys):
    # Llama-3.1-70B in fp8: 163,840 B/token x 32,768 tokens x 2 requests = 10 GiB exactly
    # (whole pages of 32 tokens: 32,768 is a multiple).
    code, out, _ = run(
        capsys, "plan", "llama3", "llama3_1_70b", "--requests", "2", "--seq-len", "32768",
        "--kv-cache-dtype", "fp8",
    )  # fmt: skip
    assert code == 0
    assert "kv_cache_dtype fp8 (override)): 10 GiB (10737418240 B)" in out


def test_plan_trtllm_max_tokens_are_what_the_engine_split_pools_hold(capsys):
    # gemma3_27b at tp 8 has two TensorRT-LLM V2 pool groups: 62 layers, 5 sliding to 1 full,
    # so 52 sliding and 10 full; a layer's token is 2 (K, V) x 16/8 heads x 128 x 2 B = 1,024 B;
    # with 64 tokens a page the sliding slot is 52 x 1,024 x 64 = 3,407,872 B and the full one
    # 10 x 1,024 x 64 = 655,360 B. 60 GiB is 1,920 grains of 32 MiB; the full group's ratio is
    # 10/62: round(1,920 x 10/62) = round(309.68) = 310 grains = 9,920 MiB / 0.625 MiB =
    # 15,872 slots = 1,015,808 tokens (64 x pages(1024, 1) + ceil(8192/64) = 64 x 17 + 128 =
    # 1,216 window pages fit the rest), 31 requests of 32,768. Plan, compare and emit agree.
    # (the early-2026 revision's split)
    argv = ("gemma3", "gemma3_27b", "--gpu-memory", "60GiB", "--tp-size", "8",
            "--max-batch-size", "64")  # fmt: skip
    early = ("--engine", "trtllm==early-2026")
    _, out, _ = run(capsys, "plan", *argv, *early)
    assert "  target   10240            4143972352     60 GiB (64424509440 B)  1015808\n" in out
    assert "max concurrent requests of 32768 tokens: 31\n" in out
    assert "pool groups" not in out  # no note: the figures are the engine's
    _, emitted, _ = run(capsys, "plan", *argv, "--emit", "trtllm==early-2026", "--format", "json")
    assert json.loads(emitted)["capacity"]["kv_tokens"] == 1_015_808
    _, compared, _ = run(capsys, "compare", *argv, *early, "--format", "json")
    (row,) = [r for r in json.loads(compared)["engines"] if r["engine"] == "trtllm-v2"]
    assert row["kv_tokens"] == 1_015_808
    assert "engine_split" not in row
