"""The shim against TensorRT-LLM's own KV cache manager V2, replayed from the goldens.

``tests/fixtures/engines/trtllm.json`` holds what the engine's code did, step by step, for the
workloads of ``tests/trtllm_cases.py`` (three seeds each), written by
``bench/engines/trtllm_runner.py --engine-src DIR`` (the engine's source at the commits the
golden lists; not needed here). Each test rebuilds the same shim and workload, replays the
engine's admission and resume outcomes, and compares every row: capacity tokens of the live
requests, and per cache manager the pages held per life cycle, the slots occupied per pool
group and the evictable slots per pool group (docs/cost-model.md "Verified against the
engine").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trtllm_cases import CASES, SEEDS, compact_managers
from tests.trtllm_shim import replay
from tests.trtllm_traces import TraceParams, continuous_batching, decode_rows

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "engines" / "trtllm.json"
BY_NAME = {case.name: case for case in CASES}


def golden() -> dict:
    return json.loads(GOLDEN.read_text())


ENTRIES = golden()["cases"]


def columns(engine: dict) -> dict[str, list[int]]:
    """Column indices of each group of a row."""
    groups = {"capacity": [0]}
    at = 1
    for name, m in engine["managers"].items():
        lcs, pgs = len(m["life_cycles"]), len(m["slots"])
        groups[f"{name}.held"] = list(range(at, at + lcs))
        groups[f"{name}.occupied"] = list(range(at + lcs, at + lcs + pgs))
        groups[f"{name}.evictable"] = list(range(at + lcs + pgs, at + lcs + 2 * pgs))
        at += lcs + 2 * pgs
    return groups


def replay_entry(entry: dict):
    case = BY_NAME[entry["case"]]
    engine = dict(entry["engine"], rows=decode_rows(entry["engine"]["rows"]))
    shim = case.shim(case.pool_pages(engine))
    params = case.params(entry["seed"], shim)
    assert params == TraceParams.from_dict(entry["inputs"]["params"])  # the workload recorded
    result = replay(shim, engine, continuous_batching(params))
    return case, shim, engine, result


def test_golden_names_the_engine_revision_of_every_file():
    data = golden()
    assert data["repository"] == "https://github.com/NVIDIA/TensorRT-LLM"
    paths = {f["path"]: f["commit"] for f in data["files"]}
    # The storage split and the life-cycle registry are the files the page counts come from.
    assert paths["tensorrt_llm/runtime/kv_cache_manager_v2/_storage_manager.py"].startswith(
        "b2dd2882"
    )
    assert paths["tensorrt_llm/runtime/kv_cache_manager_v2/_core/_kv_cache.py"].startswith(
        "f4faed18"
    )
    assert all(len(commit) == 40 for commit in paths.values())
    assert data["unit_tests_under_stand_ins"] == "22 passed, 12 skipped"


def test_golden_covers_every_case_and_seed():
    assert sorted((e["case"], e["seed"]) for e in ENTRIES) == sorted(
        (c.name, s) for c in CASES for s in SEEDS
    )
    assert all(e["engine"]["error"] is None for e in ENTRIES), [
        (e["case"], e["engine"]["error"]) for e in ENTRIES if e["engine"]["error"]
    ]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['case']}/seed{e['seed']}")
def test_engine_layers_come_from_the_spec_dimensions(entry):
    case = BY_NAME[entry["case"]]
    shim = case.shim()
    managers = compact_managers(case.engine_managers(shim))
    recorded = [{k: v for k, v in m.items() if k != "quota"} for m in entry["inputs"]["managers"]]
    assert managers == recorded


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['case']}/seed{e['seed']}")
def test_pages_held_per_life_cycle_equal_the_engine_at_every_step(entry):
    _case, _shim, engine, result = replay_entry(entry)
    rows = engine["rows"]
    assert len(result.rows) >= len(rows) or result.divergence is not None
    groups = columns(engine)
    for group, cols in groups.items():
        if group != "capacity" and not group.endswith(".held"):
            continue
        for step, (a, b) in enumerate(zip(rows, result.rows, strict=False)):
            assert [a[c] for c in cols] == [b[c] for c in cols], (group, step)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['case']}/seed{e['seed']}")
def test_pool_occupancy_and_outcomes_equal_the_engine(entry):
    _case, _shim, engine, result = replay_entry(entry)
    assert result.divergence is None
    assert result.mismatches == []
    groups = columns(engine)
    for step, (a, b) in enumerate(zip(engine["rows"], result.rows, strict=True)):
        for group, cols in groups.items():
            assert [a[c] for c in cols] == [b[c] for c in cols], (group, step)
