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
    # Every run completes but those recorded as running out (the issue-20 finding).
    errors = [(e["case"], e["engine"]["error"]) for e in ENTRIES if e["engine"]["error"]]
    assert errors == [
        (e["case"], e["engine"]["error"]) for e in ENTRIES if BY_NAME[e["case"]].engine_runs_out
    ]
    assert all("out of pages" in error for _case, error in errors)


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
    case, _shim, engine, result = replay_entry(entry)
    if case.engine_runs_out:  # the shim, on the engine's pools, runs out at the same step
        assert result.divergence is not None and result.divergence.startswith("out of pages")
        assert len(result.rows) == len(engine["rows"])
    else:
        assert result.divergence is None
    assert result.mismatches == []
    groups = columns(engine)
    for step, (a, b) in enumerate(zip(engine["rows"], result.rows, strict=True)):
        for group, cols in groups.items():
            assert [a[c] for c in cols] == [b[c] for c in cols], (group, step)


# ----------------------------------------------------------------- finding 6: quota_for_requests

# llama3_1_8b with eagle3 (K = 3): H = E + G = (K-1) + (K+1) = 6 (cost-model §2); the target holds
# 32 layers + 1 EAGLE3 layer of K+V 2 * 8 heads * 128 * 2 B = 4,096 B per token, so a page of
# tpb = 32 tokens is 32 * 33 * 4,096 = 4,325,376 B. Four requests to 2,048 tokens each peak at
# capacity 2,047 + 6 = 2,053 = ceil(2053/32) = 65 pages: 4 * 65 = 260 pages = 1,124,597,760 B.
FINDING6_PAGE = 32 * 33 * 4096
FINDING6_QUOTA = 4 * 65 * FINDING6_PAGE


@pytest.mark.parametrize("semantics", ["trtllm-v2", "exact"])
def test_quota_for_requests_holds_every_request_in_both_semantics(semantics):
    from generated.llama3 import allocator, sizing

    quota = sizing.quota_for_requests(
        "llama3_1_8b",
        requests=4,
        seq_len=2048,
        speculative="eagle3",
        max_num_tokens=256,
        semantics=semantics,
    )
    assert quota == {"target": FINDING6_QUOTA}
    shim = allocator.KVCacheShim(
        "llama3_1_8b",
        speculative="eagle3",
        max_batch_size=4,
        max_num_tokens=256,
        max_seq_len=2048,
        quota_bytes=quota,
        semantics=semantics,
        device="meta",
    )
    assert shim.pool("full").pages == 260
    for rid in range(4):
        shim.add_request(rid)
    for _ in range(8):  # 2,047 prompt tokens each, 256 at a time: 4 x 65 pages at the end
        for rid in range(4):
            history, _capacity = shim.request_state(rid)
            shim.context_chunk(rid, min(256, 2047 - history))
    shim.begin_generation(range(4))  # each at capacity 2,047 + 6 = 2,053: 65 pages
    assert shim.pool("full").used == 260


def test_the_engine_serves_the_requests_on_quota_for_requests():
    entries = [e for e in ENTRIES if e["case"] == "llama3_1_8b/eagle3_quota_for_requests"]
    assert len(entries) == 3
    for entry in entries:
        assert entry["inputs"]["managers"][0]["quota"] == FINDING6_QUOTA
        assert entry["engine"]["managers"]["target"]["slots"] == [260]
        assert entry["engine"]["error"] is None  # every request reached 2,048 tokens


# ----------------------------------------------------------------- single-request peaks


# gpt_oss_20b with eagle3 (K = 3): H = 6, window 128, tpb 64: pages(w, H) =
# ceil((128 + 6 - 2)/64) + 1 = 3 + 1 = 4 pages (cost-model §3), the engine's most at any history.
def test_the_engine_peaks_at_pages_w_h_by_hand():
    entry = next(e for e in ENTRIES if e["case"] == "gpt_oss_20b/eagle3")
    assert entry["engine"]["single_request_peaks"] == [[0, 128, 0, 4]]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['case']}/seed{e['seed']}")
def test_single_request_peaks_equal_peak_live_pages(entry):
    from kvgen.runtime.allocator import peak_live_pages

    params = entry["inputs"]["params"]
    head = params["extra_tokens"] + params["step_tokens"]
    tpb = entry["inputs"]["tokens_per_block"]
    for _lc, window, sink_blocks, peak in entry["engine"]["single_request_peaks"]:
        assert peak == peak_live_pages(window, head, sink_blocks * tpb, tpb), (window, head)


# ----------------------------------------------------------------- pool groups and the split


# The synthetic model (tpb 16): w100 s0, w100 s5 and full each hold 2 layers of K+V 2 x 2
# heads x 64 x 2 B = 512 B per token: 16 x 2 x 512 = 16,384 B slots; w70 s20 holds 2 layers of
# 1 head: 16 x 2 x 256 = 8,192 B. The engine puts the three equal slot sizes in one pool group.
def test_the_engine_merges_life_cycles_of_equal_slot_size():
    entry = next(e for e in ENTRIES if e["case"] == "synthetic/sinks")
    target = entry["engine"]["managers"]["target"]
    assert target["life_cycles"] == [[100, 0], [100, 1], [70, 2], [None, 0]]
    assert target["pool_group_of"] == [0, 0, 1, 0]
    assert target["slot_bytes"] == [[16384], [8192]]


@pytest.mark.parametrize("entry", ENTRIES[::3], ids=lambda e: e["case"])
def test_the_shim_shares_a_pool_where_the_engine_shares_a_group(entry):
    case = BY_NAME[entry["case"]]
    shim = case.shim()
    tpb = shim.tokens_per_block
    for name, described in entry["engine"]["managers"].items():
        manager = shim.managers[name]
        by_key = {(c.window, -(-c.sink_tokens // tpb)): c.name for c in manager.cycles}
        names = [by_key[(w, sb)] for w, sb in described["life_cycles"]]
        pools = [manager.pools[n] for n in names]
        for a, group_a in enumerate(described["pool_group_of"]):
            for b, group_b in enumerate(described["pool_group_of"]):
                assert (pools[a] is pools[b]) == (group_a == group_b), (names[a], names[b])
        for group, sizes in enumerate(described["slot_bytes"]):
            pool = pools[described["pool_group_of"].index(group)]
            assert pool.page_bytes == sum(sizes)


def test_the_engine_rounds_a_quota_up_to_its_grain():
    from kvgen.sizing.trtllm_split import gpu_grain

    for entry in ENTRIES:
        for probe, built in zip(
            entry["inputs"]["quota_probes"], entry["engine"]["quota_pools"], strict=True
        ):
            for name, described in built.items():
                if "refused" in described:  # tests/unit/test_trtllm_split.py: refused alike
                    continue
                assert described["quota"] % gpu_grain(probe[name]) == 0
                assert described["quota"] >= probe[name]


# ----------------------------------------------------------------- issue 20: the engine's split


# gemma3_1b, 4 requests to 2,048 tokens (tests/trtllm_cases.py derives the pages): on the bytes
# of kvgen's own pools (91,226,112 B, what quota_for_requests answered under "trtllm-v2"
# before it followed the engine's split) the engine builds 53 window + 56 full slots where
# kvgen plans 40 + 128, and runs out of full pages.
def test_the_engine_runs_out_on_kvgen_pools_of_a_window_model():
    entries = [e for e in ENTRIES if e["case"] == "gemma3_1b/serving_kvgen_pools"]
    assert len(entries) == 3
    for entry in entries:
        assert entry["inputs"]["managers"][0]["quota"] == 128 * 262_144 + 40 * 1_441_792
        assert entry["engine"]["managers"]["target"]["slots"] == [53, 56]
        assert "out of pages" in entry["engine"]["error"]
        # The shim on the engine's pools runs out at the same step, of full pages.
        assert "pool 'full'" in entry["shim_differences_at_refresh"]["divergence"]


SERVING_ON_QUOTA_FOR_REQUESTS = [c for c in CASES if c.quota_for_requests]


def _planned(case) -> dict[str, list]:
    import importlib

    from kvgen.sizing._trtllm_pools import engine_pool_plan

    sizing = importlib.import_module(f"generated.{case.family}.sizing")
    serving = {"requests": case.batch, "seq_len": case.max_seq_len,
               "speculative": case.speculative, "max_num_tokens": case.max_num_tokens}  # fmt: skip
    return engine_pool_plan(sizing, case.model, **serving)


@pytest.mark.parametrize("case", SERVING_ON_QUOTA_FOR_REQUESTS, ids=lambda c: c.name)
def test_the_engine_completes_on_quota_for_requests(case):
    # Every serving case runs in the engine on quota_for_requests(..., "trtllm-v2") as it is
    # now (the quota recorded is the one it answers), every request reaches max_seq_len, and
    # the engine built at least kvgen's pages in every pool group.
    entries = [e for e in ENTRIES if e["case"] == case.name]
    assert len(entries) == 3
    planned = _planned(case)
    for entry in entries:
        assert entry["engine"]["error"] is None
        for m in entry["inputs"]["managers"]:
            assert m["quota"] == case.quota()[m["name"]]
            built = entry["engine"]["managers"][m["name"]]
            slots = {sum(b): n for b, n in zip(built["slot_bytes"], built["slots"], strict=True)}
            for pool in planned[m["name"]]:
                assert slots[pool.slot_bytes] >= pool.planned_pages, pool


def test_the_serving_quotas_by_hand():
    by_case = {e["case"]: e for e in ENTRIES if e["seed"] == 1}
    # gemma3_1b: 101 grains of 2 MiB (tests/unit/test_trtllm_split.py): 123 window + 128 full.
    entry = by_case["gemma3_1b/serving_quota_for_requests"]
    assert entry["inputs"]["managers"][0]["quota"] == 101 * (2 << 20)
    assert entry["engine"]["managers"]["target"]["slots"] == [123, 128]
    # gpt_oss_20b: one group of 4 x 32 full + 4 x 3 + 4 window pages of 786,432 B: 144 slots
    # from 144 x 786,432 = 113,246,208 B = 54 grains, kvgen's own pools.
    entry = by_case["gpt_oss_20b/serving_quota_for_requests"]
    assert entry["inputs"]["managers"][0]["quota"] == 144 * 786_432
    target = entry["engine"]["managers"]["target"]
    assert (target["slots"], target["pool_group_of"]) == ([144], [0, 0])
    # gemma3_27b (tpb 64): 10 full layers x 2 x 16 heads x 128 x 2 B = 81,920 B a token, a
    # 5 MiB slot; 52 window (1024) layers, a 26 MiB slot. kvgen plans 4 x ceil(2047/64) = 128
    # full and 4 x pages(1024, 1) + ceil(256/64) = 4 x (ceil(1023/64) + 1) + 4 = 72 window
    # pages. The full group's ratio is 5/31, its 128 slots 160 grains of 4 MiB (the grain
    # from 2 GiB): round(G x 5/31) >= 160 first at G = 989 (159.52; 988 gives 159.35), and the
    # window group's 829 grains hold 3,316 / 26 = 127 slots.
    entry = by_case["gemma3_27b/serving_quota_for_requests"]
    assert entry["inputs"]["managers"][0]["quota"] == 989 * (4 << 20)
    assert entry["engine"]["managers"]["target"]["slots"] == [127, 128]


@pytest.mark.parametrize("case", SERVING_ON_QUOTA_FOR_REQUESTS, ids=lambda c: c.name)
def test_the_shim_serves_the_requests_on_the_engine_pools(case):
    for entry in (e for e in ENTRIES if e["case"] == case.name):
        _case, _shim, engine, result = replay_entry(entry)
        assert result.divergence is None
        assert len(result.rows) == len(engine["rows"])


# ----------------------------------------------------------------- the host tier (issue 31)

HOST_ENTRIES = [e for e in ENTRIES if BY_NAME[e["case"]].host_quota is not None]


def test_host_cases_exist_and_move_pages_to_host():
    assert {e["case"] for e in HOST_ENTRIES} == {
        "llama3_1_8b/suspend_host",
        "llama3_1_8b/watermark_resume_host",
        "llama3_1_8b/watermark_admission_host",
        "gemma3_1b/suspend_host",
    }
    # 64 MiB of 2 MiB grains: llama3_1_8b's one group of 4 MiB slots gets 32 grains = 16 rows;
    # gemma3_1b's window (1,441,792 B) and full (262,144 B) groups 27 and 5 grains = 39 and 40
    # rows (tests/unit/test_runtime_host_tier.py derives the split).
    slots = {e["case"]: e["engine"]["managers"]["target"]["host_slots"] for e in HOST_ENTRIES}
    assert slots["llama3_1_8b/suspend_host"] == [16]
    assert slots["gemma3_1b/suspend_host"] == [39, 40]
    moved = 0
    for entry in HOST_ENTRIES:
        _case, shim, _engine, result = replay_entry(entry)
        assert result.divergence is None and result.mismatches == []
        pool = shim.managers["target"].distinct_pools()[0]
        moved += pool.host_fresh  # host rows ever handed out: pages moved to host
    assert moved > 0


@pytest.mark.parametrize("entry", HOST_ENTRIES, ids=lambda e: f"{e['case']}/seed{e['seed']}")
def test_host_rows_equal_the_engine_host_slots(entry):
    diff = entry["shim_differences_at_refresh"]
    engine_slots, shim_rows = diff["host_rows"]["target"]
    assert engine_slots == shim_rows == entry["engine"]["managers"]["target"]["host_slots"]
    from tests.trtllm_shim import ShimDriver

    _case, shim, engine, _result = replay_entry(entry)  # the shim rebuilt here, no engine
    (_lcs, groups), *_ = ShimDriver(shim, engine).columns
    assert [shim._paged[g[0]].pool.host_pages for g in groups] == engine_slots


@pytest.mark.parametrize("entry", HOST_ENTRIES, ids=lambda e: f"{e['case']}/seed{e['seed']}")
def test_without_the_host_tier_the_shim_parts_from_the_engine(entry):
    import dataclasses

    case = dataclasses.replace(BY_NAME[entry["case"]], host_quota=None)
    engine = dict(entry["engine"], rows=decode_rows(entry["engine"]["rows"]))
    shim = case.shim(case.pool_pages(engine))
    result = replay(shim, engine, continuous_batching(case.params(entry["seed"], shim)))
    parted = result.divergence is not None or result.mismatches
    assert parted or result.rows[: len(engine["rows"])] != engine["rows"]
