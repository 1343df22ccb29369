"""``kvgen plan --emit trtllm==38198e34``: the ``pool_ratio`` that makes
TensorRT-LLM 38198e34's own pool split build kvgen's pools, and the capacity it then builds.

The issue's example: gemma3_27b alone at 40 GiB (B 8, N 8192, tpb 64). The early-2026 revision
takes no ratio: its equal-pages split of the plain quota holds 84,352 tokens. At 38198e34 kvgen
writes the ratio, and the engine's split (its C++, compiled on CPU:
``tests/fixtures/engines/trtllm_static.json``, ``emit_pool_splits``) builds kvgen's pools.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen.sizing._trtllm_pools import engine_plan_for_split, pool_ratio_for_quota

GIB = 1 << 30
GOLDEN = json.loads(
    (Path(__file__).resolve().parents[2] / "tests/fixtures/engines/trtllm_static.json").read_text()
)
EMITTED = GOLDEN["emit_pool_splits"]


def plan(capsys, model: str, *args: str) -> tuple[int, str, str]:
    family = model.split("_")[0] if not model.startswith("gpt_oss") else "gpt_oss"
    code = main(["-q", "plan", family, model, *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_gemma3_27b_at_40_gib_writes_the_ratio_and_prints_what_the_engine_builds(capsys):
    # kvgen's pools at T tokens: 8 requests x pages(1024, 1) = 8 x (ceil(1023/64) + 1) = 136
    # window pages and 128 context pages: 264 x 27,262,976 B = 6,864 MiB, 214.5 -> 215 grains
    # of 32 MiB; the other 1,280 - 215 = 1,065 grains hold 1,065 x 32 MiB / 5,242,880 B =
    # 6,816 full pages = 436,224 tokens. pool_ratio: 215/1280 = 0.16796875 (window, the
    # first life cycle the layers name), 1,065/1,280 = 0.83203125 (full).
    args = ("--gpu-memory", "40GiB", "--max-seq-len", "131072")
    code, out, _ = plan(capsys, "gemma3_27b", *args, "--emit", "trtllm==38198e34",
                        "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    config = data["fields"]["kv_cache_config"]
    assert config["pool_ratio"] == [0.16796875, 0.83203125]
    assert config["max_gpu_total_bytes"] == 40 * GIB
    cap = data["capacity"]
    assert (cap["kv_tokens"], cap["num_blocks"]) == (436_224, 6_816)
    assert cap["max_concurrency"] == 436_224 / 131_072
    pools = {tuple(p["life_cycles"]): p for p in cap["engine_pools"]["target"]}
    assert pools[("swa1024",)]["engine_pages"] == pools[("swa1024",)]["planned_pages"] == 264
    assert pools[("full",)]["engine_pages"] == pools[("full",)]["planned_pages"] == 6_816
    assert (data["engine"], data["version"]) == ("trtllm-v2", "V2 38198e34 (cost-model §11)")
    assert data["notes"][0].startswith(
        "for TensorRT-LLM KV cache manager V2 38198e34: the capacity is what its own"
    )
    # 38198e34 is the default (issue 31): trtllm and trtllm-v2 emit the same.
    for name in ("trtllm", "trtllm-v2"):
        code, out, _ = plan(capsys, "gemma3_27b", *args, "--emit", name, "--format", "json")
        assert json.loads(out) == data
    # The early-2026 revision: no ratio, its split's 84,352 tokens, and the output names it.
    code, out, _ = plan(capsys, "gemma3_27b", *args, "--emit", "trtllm==early-2026",
                        "--format", "json")  # fmt: skip
    early = json.loads(out)
    assert "pool_ratio" not in early["fields"]["kv_cache_config"]
    assert early["capacity"]["kv_tokens"] == 84_352
    assert early["version"] == "V2 early-2026 (cost-model §4)"
    # The emitted YAML names its release in its first line (a comment).
    code, out, _ = plan(capsys, "gemma3_27b", *args, "--emit", "trtllm", "--format", "yaml")
    first = "# for TensorRT-LLM KV cache manager V2 38198e34 (trtllm==38198e34)"
    assert out.splitlines()[0] == first
    # --engine names the release as well as --emit does; the text report prints the engine's
    # capacity.
    code, out, _ = plan(capsys, "gemma3_27b", *args, "--engine", "trtllm==38198e34",
                        "--emit", "trtllm==38198e34")  # fmt: skip
    assert "capacity: 436,224 KV tokens, 6,816 blocks" in out
    assert "pool_ratio: [0.16796875, 0.83203125]" in out


@pytest.mark.parametrize("row", EMITTED, ids=lambda r: f"{r['model']}-{r['budget_bytes'] >> 30}g")
def test_the_engines_split_builds_kvgens_pools_from_the_emitted_ratio(row):
    # The ratio kvgen writes is the one the engine's C++ was run with, and from it the engine
    # builds at least kvgen's pages in every pool group: kvgen's T is what it holds.
    sizing = importlib.import_module(f"generated.{row['family']}.sizing")
    common = {"max_batch_size": row["max_batch_size"], "max_num_tokens": row["max_num_tokens"],
              "max_seq_len": row["max_seq_len"]}  # fmt: skip
    ratio = pool_ratio_for_quota(sizing, row["model"], row["budget_bytes"], **common)
    assert ratio == row["pool_ratio"]
    quota = {"target": row["budget_bytes"]}
    built = engine_plan_for_split(sizing, row["model"], quota, pool_ratio={"target": ratio},
                                  **common)  # fmt: skip
    tokens, pools = built["target"]
    assert sorted(p.engine_pages for p in pools) == sorted(row["engine"]["slots"])
    assert all(p.engine_pages >= p.planned_pages for p in pools)
    assert tokens is not None and tokens > 0


def test_a_draft_pair_writes_no_ratio_and_says_why(capsys):
    # 38198e34 hands the draft manager the target's pool_ratio: kvgen writes none, and the
    # capacity is the engine's own split of its share (gemma3_27b + draft_1b at 40 GiB, S
    # 32768: the target's 35,772,170,240 B, the draft's 7,177,502,720 B, the cap of 8 mirrors).
    code, out, _ = plan(capsys, "gemma3_27b", "--gpu-memory", "40GiB", "--max-seq-len", "32768",
                        "--speculative", "draft_1b", "--emit", "trtllm==38198e34",
                        "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert "pool_ratio" not in data["fields"]["kv_cache_config"]
    assert data["capacity"]["quota_bytes"] == {"target": 35_772_170_240, "draft": 7_177_502_720}
    assert any("hands the separate draft manager the target's pool_ratio" in n
               for n in data["notes"])  # fmt: skip


def test_an_unknown_revision_is_refused_naming_the_releases(capsys):
    with pytest.raises(SystemExit):
        main(["-q", "plan", "gemma3", "gemma3_27b", "--gpu-memory", "40GiB",
              "--emit", "trtllm==1.4"])  # fmt: skip
    assert "releases modelled: early-2026, 38198e34 (default: 38198e34)" in (
        capsys.readouterr().err
    )


def test_the_revision_flag_is_gone(capsys):
    # The release is the engine's value (trtllm==38198e34): no flag of its own.
    with pytest.raises(SystemExit):
        main(["-q", "plan", "gemma3", "gemma3_27b", "--gpu-memory", "40GiB", "--emit", "trtllm",
              "--trtllm-revision", "38198e34"])  # fmt: skip
    assert "unrecognized arguments: --trtllm-revision" in capsys.readouterr().err


def test_a_plan_without_emit_answers_38198e34_as_emit_does(capsys):
    # Issue 31: on 5af0688 a plain plan at 38198e34 was refused, naming --emit. Now it prints
    # what --emit's settings make that revision build (436,224 tokens above), and names it.
    args = ("--gpu-memory", "40GiB", "--max-seq-len", "131072", "--format", "json")
    for name in ("trtllm==38198e34", "trtllm"):
        code, out, _ = plan(capsys, "gemma3_27b", *args, "--engine", name)
        assert code == 0
        data = json.loads(out)
        assert data["engine_version"] == "TensorRT-LLM KV cache manager V2 38198e34"
        target = data["batches"][0]["managers"][0]
        assert (target["share"], target["max_tokens"]) == (40 * GIB, 436_224)


def test_the_plan_of_gemma3_27b_with_draft_1b_shows_the_engines_draft_share(capsys):
    # Issue 31: the engine's _split_kv_cache_budget_for_draft gives draft_1b 7,177,502,720 B
    # of 40 GiB (B 8, N 8192, S 32768; tests/generated/test_trtllm_static_goldens.py derives
    # it by hand: 299,892,736 + 8 mirrors x 859,701,248); kvgen's slope split gave
    # 1,977,714,200 B (on 5af0688 a plain plan printed that). The target keeps the rest,
    # 42,949,672,960 - 7,177,502,720 = 35,772,170,240 B (40 GiB is whole 32 MiB grains).
    code, out, _ = plan(capsys, "gemma3_27b", "--gpu-memory", "40GiB", "--speculative",
                        "draft_1b", "--format", "json")  # fmt: skip
    assert code == 0
    managers = {m["name"]: m for m in json.loads(out)["batches"][0]["managers"]}
    assert managers["draft"]["share"] == 7_177_502_720
    assert managers["target"]["share"] == 35_772_170_240
