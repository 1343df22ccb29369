"""``kvgen plan``: capacity of one deployment, from the project's generated sizing modules.

Each test renders synthetic specs into a temporary project with ``kvgen generate`` and runs
the real CLI there (the shipped llama3 spec is used too when it exists).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from kvgen._cli.main import main

REPO = Path(__file__).resolve().parents[2]

# Llama-3.1-8B shape: 32 layers * 2 (K, V) * 8 kv heads * 128 head_dim * 2 B (bf16)
#   = 131072 B per token, all full attention so the intercept is 0.
# pard4's draft pool: 2 layers * 2 * 8 * 128 * 2 B = 8192 B per token, intercept 0.
LLAMA = """\
schema_version: 1
family: llamaish
tokens_per_block: 32
kv_cache_dtype: bf16
models:
  - name: llama3_1_8b
    max_seq_len: 131072
    layer_kinds:
      full: {attention: full, kv_heads: 8, head_dim: 128}
    layers: {count: 32, pattern: [full]}
speculative:
  - name: pard4
    mode: pard
    max_draft_len: 4
    draft:
      layer_kinds: {d: {attention: full, kv_heads: 8, head_dim: 128}}
      layers: {count: 2, pattern: [d]}
"""

# 2 full + 2 sliding (window 1024) layers of 1024 B/token, tpb 32, no speculation (H = 1):
#   slope = 2048 B/token, per request 2 * 1024 * 32 * (ceil(1023/32) + 1) = 2162688 B,
#   ctx_swa = 2048 B/token.
SWA = """\
schema_version: 1
family: swa
tokens_per_block: 32
kv_cache_dtype: bf16
models:
  - name: swa_a
    max_seq_len: 65536
    layer_kinds:
      full: {attention: full, bytes_per_token: 1024}
      local: {attention: sliding, window: 1024, bytes_per_token: 1024}
    layers: {count: 4, pattern: [local, full]}
"""


@pytest.fixture
def project(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    families = Path("schema/families")
    families.mkdir(parents=True)
    (families / "llamaish.yaml").write_text(LLAMA)
    (families / "swa.yaml").write_text(SWA)
    shipped = REPO / "schema/families/llama3.yaml"
    if shipped.exists():
        shutil.copy(shipped, families / "llama3.yaml")
    assert main(["-q", "generate"]) == 0
    capsys.readouterr()
    return tmp_path


def plan(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_llama_8b_in_16_gib_holds_131072_tokens(project, capsys):
    # 16 GiB / 131072 B per token = 17179869184 / 131072 = 131072 tokens.
    # The early-2026 revision's pools (one pool group: all of the quota); the default,
    # 38198e34, holds the same here (test_llama_8b_at_the_default_release_names_it).
    code, out, _ = plan(capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "16GiB",
                        "--engine", "trtllm==early-2026")  # fmt: skip
    assert code == 0
    assert out == (
        "llamaish/llama3_1_8b, speculative none, semantics trtllm-v2\n"
        "engine trtllm-v2 (--engine): TensorRT-LLM KV cache manager V2 early-2026\n"
        "GPU KV budget 16 GiB (17179869184 B) per rank; max_num_tokens 8192, max_seq_len 32768 "
        "(native 131072), tp_size 1\n"
        "max concurrent requests of 32768 tokens: 4\n"
        "\n"
        "max_batch_size 8\n"
        "  manager  slope (B/token)  intercept (B)  share                   max tokens\n"
        "  target   131072           0              16 GiB (17179869184 B)  131072\n"
        "  largest max_seq_len for 8 requests: 16384\n"
    )


def test_llama_8b_at_the_default_release_names_it(project, capsys):
    # Issue 31: the default TensorRT-LLM release is 38198e34 and the plan names it; one full
    # attention pool takes the whole 16 GiB quota (1,024 grains of 16 MiB, whole pages of
    # 32 x 131,072 B = 4 MiB: 4,096 pages = 131,072 tokens), as at early-2026.
    code, out, _ = plan(capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "16GiB")
    assert code == 0
    lines = out.splitlines()
    assert (
        lines[1] == "engine trtllm-v2 (kvgen's default): TensorRT-LLM KV cache manager V2 38198e34"
    )
    assert lines[7] == "  target   131072           0              16 GiB (17179869184 B)  131072"


@pytest.mark.skipif(
    not (REPO / "schema/families/llama3.yaml").exists(), reason="llama3 family not shipped"
)
def test_shipped_llama3_1_8b_in_16_gib_holds_131072_tokens(project, capsys):
    code, out, _ = plan(
        capsys, "llama3", "llama3_1_8b", "--gpu-memory", "16GiB", "--format", "json"
    )
    assert code == 0
    target = json.loads(out)["batches"][0]["managers"][0]
    assert target == {
        "name": "target",
        "slope": 131072,
        "intercept": 0,
        "share": 16 << 30,
        "max_tokens": 131072,
    }


def test_separate_draft_pool_gets_the_sizing_6_split(project, capsys):
    # docs/cost-model.md §6 with M = 16 GiB, target (131072, 0), draft (8192, 0):
    #   R = M - 0 = 17179869184
    #   draft  = 0 + floor(R * 8192 / (131072 + 8192)) = floor(17179869184 / 17) = 1010580540
    #   target = M - draft = 16169288644
    # max tokens: what TensorRT-LLM V2 builds from each share in whole grains (one pool group
    # each, all of it): the target's 15.06 GiB in grains of 16 MiB (the grain from 8 GiB) is
    # 963 grains = 16,156,459,008 B / (32 x 131,072 = 4 MiB a page) = 3,852 pages = 123,264
    # tokens; the draft's 963.76 MiB in grains of 2 MiB is 481 = 1,008,730,112 B / (32 x
    # 8,192 = 256 KiB) = 3,848 pages = 123,136 tokens (kvgen's own pools, the affine
    # estimate: 16169288644 // 131072 = 123361 and 1010580540 // 8192 = 123361).
    # Requests (quota_for_requests, trtllm-v2, in whole pages of tpb = 32 as the engine holds
    # them): each of R requests of S tokens peaks at S - 1 + H = S + 10 tokens (pard, K = 4:
    # H = 3K - 1 = 11), ceil((S + 10) / 32) pages on both managers:
    #   R * ceil((S + 10) / 32) * 32 * (131072 + 8192) <= 17179869184
    #   R = 3 at S = 32768: 1,025 pages = 32,800 tokens each, 3 * 32800 * 139264 = 13703577600
    #   (4 would need 18271436800);
    #   R = 8: pages * 32 <= 17179869184 / (8 * 139264) = 15420.2 -> 481 pages = 15,392
    #   tokens -> S + 10 <= 15392 -> S = 15382.
    code, out, _ = plan(
        capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "16GiB", "--speculative", "pard4",
        "--engine", "trtllm==early-2026",
    )  # fmt: skip
    assert code == 0
    assert out.splitlines()[3:] == [
        "max concurrent requests of 32768 tokens: 3",
        "",
        "max_batch_size 8",
        "  manager  slope (B/token)  intercept (B)  share                      max tokens",
        "  target   131072           0              15.06 GiB (16169288644 B)  123264",
        "  draft    8192             0              963.76 MiB (1010580540 B)  123136",
        "  largest max_seq_len for 8 requests: 15382",
    ]


def test_concurrency_search_charges_the_intercept_of_each_request(project, capsys):
    # n requests of 32768 tokens at batch n need, in 1 GiB:
    #   n * 32768 * 2048 + n * 2162688 + 8192 * 2048 <= 1073741824
    #   n <= (1073741824 - 16777216) / 69271552 = 15.26  -> 15 requests.
    # 8 requests of length S (window 1024 < S): 8 * S * 2048 + 8 * 2162688 + 8192 * 2048
    #   <= 1073741824  ->  S <= 1039663104 / 16384 = 63456.
    # max tokens (docs/cost-model.md §4):
    #   8192 + (1073741824 - 8 * 2162688 - 8192 * 4096) // 2048 = 507648.
    code, out, _ = plan(capsys, "swa", "swa_a", "--gpu-memory", "1GiB",
                        "--engine", "trtllm==early-2026")  # fmt: skip
    assert code == 0
    assert out == (
        "swa/swa_a, speculative none, semantics trtllm-v2\n"
        "engine trtllm-v2 (--engine): TensorRT-LLM KV cache manager V2 early-2026\n"
        "GPU KV budget 1 GiB (1073741824 B) per rank; max_num_tokens 8192, max_seq_len 32768 "
        "(native 65536), tp_size 1\n"
        "max concurrent requests of 32768 tokens: 15\n"
        "\n"
        "max_batch_size 8\n"
        "  manager  slope (B/token)  intercept (B)  share                 max tokens\n"
        "  target   2048             34078720       1 GiB (1073741824 B)  507648\n"
        "  largest max_seq_len for 8 requests: 63456\n"
    )


def test_several_batch_sizes_and_seq_len(project, capsys):
    code, out, _ = plan(
        capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "80GiB", "--max-batch-size", "1",
        "64", "--seq-len", "8192", "--format", "json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    # 80 GiB / 131072 B = 655360 tokens = 80 requests of 8192 tokens.
    assert data["max_requests"] == 80
    assert [b["max_batch_size"] for b in data["batches"]] == [1, 64]
    # One request may use the whole native context; 64 share 655360 tokens: 10240 each.
    assert [b["max_seq_len_fit"] for b in data["batches"]] == [131072, 10240]
    assert data["fits"] is True


def test_budget_below_the_fixed_cost_exits_1(project, capsys):
    # The intercept at batch 8 is 34078720 B (32.5 MiB): 16 MiB cannot hold one token.
    code, out, _ = plan(capsys, "swa", "swa_a", "--gpu-memory", "16MiB")
    assert code == 1
    assert "  does not fit: the target share 16777216 B does not cover its fixed cost\n" in out


def test_sizes_in_every_unit(project, capsys):
    for size in ("17179869184B", "16GiB", "16384MiB", "0.015625TiB", "16 gib"):
        code, out, _ = plan(
            capsys, "llamaish", "llama3_1_8b", "--gpu-memory", size, "--format", "json"
        )
        assert code == 0
        assert json.loads(out)["batches"][0]["managers"][0]["max_tokens"] == 131072


def test_bad_size_is_a_usage_error(project, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "llamaish", "llama3_1_8b", "--gpu-memory", "80 gigs"])
    assert exit_info.value.code == 2
    assert "invalid size '80 gigs'" in capsys.readouterr().err


def test_missing_generated_module_says_run_generate(project, capsys):
    code, out, err = plan(capsys, "gemma9", "x", "--gpu-memory", "80GiB")
    assert (code, out) == (2, "")
    assert (
        err
        == (
            "kvgen: error: generated/gemma9/sizing.py not found (generated families: "
            + ", ".join(sorted(p.parent.name for p in Path("generated").glob("*/sizing.py")))
            # issue 32: the shipped families are names FAMILY may take too
            + ") (did you mean 'gemma3'?): run `kvgen generate` to create it, or name a family "
            "kvgen ships (`kvgen models` lists them)\n"
        )
    )


def test_unknown_model_and_profile_are_usage_errors(project, capsys):
    code, _, err = plan(capsys, "llamaish", "llama9", "--gpu-memory", "80GiB")
    assert code == 2
    assert err == "kvgen: error: model must be one of llama3_1_8b; got 'llama9'\n"
    code, _, err = plan(
        capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "80GiB", "--speculative", "mtp9"
    )
    assert code == 2
    assert err == "kvgen: error: speculative must be one of none, pard4; got 'mtp9'\n"


@pytest.mark.skipif(
    not (REPO / "schema/families/llama3.yaml").exists(), reason="llama3 family not shipped"
)
def test_profile_for_another_model_is_a_usage_error(project, capsys):
    # eagle3 is the Llama-3.1-8B head (`models: [llama3_1_8b]`): it does not apply to 3.2-1B.
    code, _, err = plan(
        capsys, "llama3", "llama3_2_1b", "--gpu-memory", "80GiB", "--speculative", "eagle3"
    )
    assert code == 2
    assert err == (
        "kvgen: error: speculative 'eagle3' does not apply to model 'llama3_2_1b'; profiles "
        "for llama3_2_1b: none, eagle3_1b, eagle3_two_model, pard4, ngram4\n"
    )


def test_plot_writes_a_png(project, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "capacity.png"
    code, _, err = plan(
        capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "80GiB", "--plot", str(target)
    )
    assert code == 0
    data = target.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    assert f"kvgen: wrote {target}\n" in err


def test_plot_without_matplotlib_is_a_clear_error(project, capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = plan(
        capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "80GiB", "--plot",
        str(tmp_path / "x.png"),
    )  # fmt: skip
    assert code == 2
    assert err == (
        "kvgen: error: --plot needs matplotlib, which is not installed: pip install 'kvgen[plot]'\n"
    )


@pytest.mark.parametrize(
    ("appended", "reason"),
    [
        ("\nraise RuntimeError('boom')\n", "failed to load: RuntimeError: boom"),
        ("\nimport sys\nsys.exit(0)\n", "failed to load: it called sys.exit(0)"),
    ],
)
def test_a_module_that_raises_or_exits_on_import_is_an_error(project, capsys, appended, reason):
    module = Path("generated/llamaish/sizing.py")
    module.write_text(module.read_text() + appended)
    code, out, err = plan(capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "16GiB",
                          "--engine", "trtllm==early-2026")  # fmt: skip
    assert (code, out) == (2, "")
    assert err == f"kvgen: error: generated/llamaish/sizing.py {reason}\n"


def test_a_module_that_exits_when_called_is_an_error_not_success(project, capsys):
    module = Path("generated/llamaish/sizing.py")
    module.write_text(
        module.read_text() + "\n\ndef split_budget(*args, **kwargs):  # noqa: F811\n"
        "    import sys\n\n    sys.exit(0)\n"
    )
    code, out, err = plan(capsys, "llamaish", "llama3_1_8b", "--gpu-memory", "16GiB",
                          "--engine", "trtllm==early-2026")  # fmt: skip
    assert (code, out) == (2, "")
    assert err == "kvgen: error: llamaish/sizing.py called sys.exit(0)\n"


def test_plot_has_a_panel_per_batch_size_with_budget_demand_and_human_units(project):
    pytest.importorskip("matplotlib")
    from kvgen._cli.commands.plan import capacity_figure, human_tokens
    from kvgen._engines.planner import load_sizing, make_plan

    sizing = load_sizing("llamaish")
    plan = make_plan(sizing, "llama3_1_8b", gpu_memory=16 * 2**30, batch_sizes=[1, 64])
    fig = capacity_figure(sizing, plan)
    fig.canvas.draw()
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["max_batch_size 1", "max_batch_size 64"]
    # llamaish: 131072 B/token, no intercept; x runs to 1.25 x 16 GiB = 20 GiB, which holds
    # 163840 tokens. B=1: demand 1 x 32768 is drawn; B=64: 64 x 32768 = 2097152 > 1.5 x 163840,
    # so the panel says it is above rather than flattening the curves.
    for ax, demand in zip(axes, (32768, None), strict=True):
        lines = ax.get_lines()
        labels = [line.get_label() for line in lines if not line.get_label().startswith("_")]
        assert labels == ["none", "pard4"]
        flat = [line for line in lines if line.get_label().startswith("_")]
        horizontal = [line.get_ydata()[0] for line in flat if len(set(line.get_ydata())) == 1]
        assert horizontal == ([demand] if demand else [])
        assert 16.0 in [line.get_xdata()[0] for line in flat]  # the budget line, in GiB
        notes = [t.get_text() for t in ax.texts]
        assert "budget 16 GiB" in notes
        if demand is None:
            assert "demand B x S = 64 x 32.8k = 2.1M (above this panel)" in notes
        assert ax.yaxis.get_offset_text().get_text() == ""  # no `1e6` offset
        ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert ticks and all(t[-1] in "0123456789kMG" and "e" not in t for t in ticks)
    import matplotlib.pyplot as plt

    plt.close(fig)
    assert [human_tokens(v) for v in (0, 512, 65536, 1.5e6, 2e9)] == [
        "0", "512", "65.5k", "1.5M", "2G",
    ]  # fmt: skip


def test_coinciding_profiles_are_named_in_the_legend(project):
    pytest.importorskip("matplotlib")
    from kvgen._cli.commands.plan import capacity_figure
    from kvgen._engines.planner import load_sizing, make_plan

    sizing = load_sizing("llama3")
    plan = make_plan(sizing, "llama3_1_8b", gpu_memory=24 * 2**30, batch_sizes=[8])
    fig = capacity_figure(sizing, plan)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    # ngram4 keeps no draft cache and eagle3_two_model's draft lives in its own pool, so
    # their target curves equal `none`'s; the legend says so.
    assert "ngram4 (= none)" in labels and "none" in labels
    styles = {line.get_linestyle() for line in fig.axes[0].get_lines()[: len(labels)]}
    assert len(styles) >= min(len(labels), 4)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_memory_for_requests_of_seq_len(project, capsys):
    # llamaish (131072 B/token, tpb 32, H = 1): 2 requests of 1000 tokens each peak at
    # 999 + 1 = 1000 tokens, held as whole pages: ceil(1000/32) = 32 pages = 1,024 tokens.
    # trtllm-v2: 2 * 1024 * 131072 = 268435456 B = 256 MiB (the engine's pages, as exact).
    code, out, _ = plan(capsys, "llamaish", "llama3_1_8b", "--requests", "2", "--seq-len", "1000")
    assert code == 0
    assert out == (
        "llamaish/llama3_1_8b, speculative none, semantics trtllm-v2\n"
        "memory for 2 requests of 1000 tokens (max_num_tokens 8192, tp_size 1): "
        "256 MiB (268435456 B)\n"
        "  target: 256 MiB (268435456 B)\n"
    )
    # exact: whole pages, ceil(1000/32) = 32 per request, 64 pages * 32 * 131072 = 256 MiB.
    args = ("llamaish", "llama3_1_8b", "--requests", "2", "--seq-len", "1000")
    code, out, _ = plan(capsys, *args, "--semantics", "exact", "--gpu-memory", "256MiB")
    assert code == 0
    assert out.splitlines()[1:] == [
        "memory for 2 requests of 1000 tokens (max_num_tokens 8192, tp_size 1): "
        "256 MiB (268435456 B)",
        "  target: 256 MiB (268435456 B)",
        "fits in 256 MiB (268435456 B)",
    ]
    code, out, _ = plan(capsys, *args, "--semantics", "exact", "--gpu-memory", "255MiB")
    assert code == 1
    assert out.splitlines()[-1] == "does not fit in 255 MiB (267386880 B)"
    code, out, _ = plan(capsys, *args, "--format", "json")
    assert code == 0
    assert json.loads(out)["managers"] == {"target": 268435456}


def test_plan_needs_gpu_memory_or_requests(project, capsys):
    code, _, err = plan(capsys, "llamaish", "llama3_1_8b")
    assert code == 2
    assert "--gpu-memory" in err


def test_memory_for_requests_under_decode_context_parallelism(project, capsys):
    # llamaish at tp 16: ceil(8/16) = 1 KV head per rank, 32 * 2 * 128 * 2 B = 16384 B per
    # token on every rank; --dcp-size 2 shards it: 8192 B per token of history on one rank,
    # pages of 32 tokens on each of 2 ranks span 64 tokens (docs/cost-model.md §9). exact: 2
    # requests peak at 1000 tokens, ceil(1000/64) = 16 pages each, 32 pages * 32 * 16384 B.
    args = ("llamaish", "llama3_1_8b", "--requests", "2", "--seq-len", "1000", "--tp-size", "16")
    code, out, _ = plan(capsys, *args, "--dcp-size", "2", "--semantics", "exact")
    assert code == 0
    assert out.splitlines()[1:] == [
        "memory for 2 requests of 1000 tokens (max_num_tokens 8192, tp_size 16, dcp_size 2): "
        "16 MiB (16777216 B)",
        "  target: 16 MiB (16777216 B)",
    ]
    code, out, _ = plan(capsys, *args, "--dcp-size", "2", "--format", "json")
    assert json.loads(out)["dcp_size"] == 2
    # trtllm-v2 holds whole pages too: 2 requests x 16 pages x 64 tokens x 8192 B.
    assert json.loads(out)["managers"] == {"target": 2 * 16 * 64 * 8192}
    # tp 8 over 8 KV heads leaves no copies to shard: the engines refuse, exit 2.
    args = ("llamaish", "llama3_1_8b", "--gpu-memory", "1GiB", "--tp-size", "8")
    code, out, err = plan(capsys, *args, "--dcp-size", "2")
    assert code == 2 and out == ""
    assert "dcp_size must be <= tp_size // kv_heads = 1" in err


def test_memory_for_requests_follows_the_engine_split_of_a_window_model(capsys):
    # Shipped gemma3_1b (tpb 64, H = 1), 4 requests of 2,048 tokens, N = 256: kvgen's pools are
    # 4 x ceil(2047/64) = 128 full pages of 262,144 B and 4 x pages(512, 1) + ceil(256/64) = 40
    # window pages of 1,441,792 B, 91,226,112 B. Two engine pool groups of unequal slot bytes
    # share the quota by TensorRT-LLM V2's proportional split: the least quota that builds 128
    # full slots is 101 grains of 2 MiB = 211,812,352 B (tests/unit/test_trtllm_split.py).
    # (The swa fixture's full and window layers have equal slot bytes, one group: its
    # figures above are kvgen's pools.)
    args = ["plan", "gemma3", "gemma3_1b", "--generated", str(REPO / "generated")]
    args += ["--requests", "4", "--seq-len", "2048", "--max-num-tokens", "256"]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["semantics"] == "trtllm-v2"
    assert data["managers"] == {"target": 101 * (2 << 20)} == {"target": 211_812_352}
    assert main([*args, "--gpu-memory", "150MiB"]) == 1  # kvgen's own pools would fit
    assert capsys.readouterr().out.splitlines()[-1] == "does not fit in 150 MiB (157286400 B)"
