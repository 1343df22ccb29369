"""TensorRT-LLM 38198e34 as the default release (issue 31): what ``--emit trtllm`` writes for
gemma3_27b is the pool split the engine's own C++ builds (the golden row of
tests/fixtures/engines/trtllm_static.json, ``emit_pool_splits``, run by
bench/engines/trtllm_oracle.py), and ``plan``, ``compare`` and ``engine_capacity`` print the
capacity of that split. On 5af0688 ``--emit trtllm`` wrote no ratio (the early-2026 revision)
and engine_capacity refused trtllm==38198e34."""

from __future__ import annotations

import json
from pathlib import Path

from kvgen._cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((ROOT / "tests/fixtures/engines/trtllm_static.json").read_text())
GIB = 1 << 30


def _golden(model: str, budget: int) -> dict:
    rows = [r for r in GOLDEN["emit_pool_splits"]
            if r["model"] == model and r["budget_bytes"] == budget]  # fmt: skip
    assert len(rows) == 1
    return rows[0]


def test_emit_trtllm_on_gemma3_27b_writes_the_split_the_engine_builds(capsys):
    # The golden: B 8, N 8192, S 32768 (kvgen's defaults), 40 GiB; the engine's C++ split,
    # given pool_ratio [0.16796875, 0.83203125] (the window life cycle first, as the model's
    # layers first name it), builds 6,816 full slots and 264 window slots. kvgen's pools at
    # T: 8 requests x (ceil((1024 + 1 - 2)/64) + 1 = 17) + ceil(min(T, 8192)/64) = 264 window
    # pages and ceil(T/64) full pages, so T = 6,816 x 64 = 436,224 tokens.
    row = _golden("gemma3_27b", 40 * GIB)
    assert (row["max_batch_size"], row["max_num_tokens"], row["max_seq_len"]) == (8, 8192, 32768)
    assert main(["-q", "plan", "gemma3", "gemma3_27b", "--gpu-memory", "40GiB", "--emit",
                 "trtllm", "--format", "json"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == "V2 38198e34 (cost-model §11)"
    assert data["fields"]["kv_cache_config"]["pool_ratio"] == row["pool_ratio"]
    assert data["fields"]["kv_cache_config"]["max_gpu_total_bytes"] == row["budget_bytes"]
    pools = data["capacity"]["engine_pools"]["target"]
    assert sorted(p["engine_pages"] for p in pools) == sorted(row["engine"]["slots"])
    assert data["capacity"]["kv_tokens"] == 6_816 * 64 == 436_224
    # engine_capacity's default answer is that capacity, in the runtime and from the spec.
    from kvgen._engines.capacity import engine_capacity
    from kvgen._spec.loader import load_family

    from generated.gemma3 import sizing

    kw = {"max_seq_len": 32768, "max_num_tokens": 8192}
    ours = sizing.engine_capacity("gemma3_27b", 40 * GIB, engine="trtllm", **kw)
    family = load_family(ROOT / "schema" / "families" / "gemma3.yaml")
    assert ours == engine_capacity(family, "gemma3_27b", 40 * GIB, engine="trtllm", **kw)
    assert (ours.kv_tokens, ours.num_blocks, ours.max_concurrency) == (436_224, 6_816, 8.0)


def test_compare_names_the_revision_and_prints_its_capacity(capsys):
    # The same figure in compare's row, at the revision it names (the text table, JSON too).
    assert main(["-q", "compare", "gemma3", "gemma3_27b", "--gpu-memory", "40GiB",
                 "--format", "json"]) == 0  # fmt: skip
    rows = {r["engine"]: r for r in json.loads(capsys.readouterr().out)["engines"]}
    assert rows["trtllm-v2"]["version"] == "V2 38198e34 (cost-model §11)"
    assert rows["trtllm-v2"]["kv_tokens"] == 436_224
    assert main(["-q", "compare", "gemma3", "gemma3_27b", "--gpu-memory", "40GiB",
                 "--format", "markdown", "--engine", "trtllm==early-2026"]) == 0  # fmt: skip
    assert "| trtllm-v2 | V2 early-2026 (cost-model §4) | 84,352 |" in capsys.readouterr().out
