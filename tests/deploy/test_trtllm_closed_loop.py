"""The closed loop of ``kvgen plan --emit trtllm`` with TensorRT-LLM's KV cache manager V2, replayed
from the goldens (``closed_loop`` in tests/fixtures/engines/trtllm.json, written by
``bench/engines/trtllm_runner.py`` from the engine's code run on CPU; the configs:
tests/trtllm_closed_loop.py). For every config emit, run again here, prints the quota the
engine was given, reports the pages the engine built from it in every pool group, and plans no
more pages than those: the capacity it prints is one the emitted settings produce.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import trtllm_closed_loop as loop

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "engines" / "trtllm.json"
CLOSED = json.loads(GOLDEN.read_text())["closed_loop"]
CONFIGS = CLOSED["configs"]
BUILT = [c for c in CONFIGS if "engine" in c]


def test_the_closed_loop_covers_the_grid():
    # 13 models x 2 tokens_per_block x 2 lengths x 2 tp x (none + a profile; qwen2_5 has none
    # in its target manager) = 12 x 16 + 8 = 200 configs, recorded in the grid's order.
    assert [c["config"] for c in CONFIGS] == loop.configs()
    assert len(CONFIGS) == 200
    assert {c["config"]["family"] for c in CONFIGS} == {f for f, _m, _p in loop.MODELS}
    assert {c["config"]["tokens_per_block"] for c in BUILT} == {32, 64}
    assert {c["config"]["tp_size"] for c in BUILT} == {1, 8}
    # The engine refuses nothing it is given; emit refuses what the engine's attention would
    # (query heads not divisible by tp 8: gemma3_1b's 4, qwen2_5_0_5b's 14).
    assert not [c["id"] for c in BUILT if "refused" in c["engine"]]
    refused = {c["config"]["model"] for c in CONFIGS if "emit_refused" in c}
    assert refused == {"gemma3_1b", "qwen2_5_0_5b"}
    assert all(c["config"]["tp_size"] == 8 for c in CONFIGS if "emit_refused" in c)
    # Several pool groups (a sliding window shorter than max_seq_len, of other slot bytes
    # than the full layers) in part of them: the engine's split is what is checked there.
    assert sum(len(c["engine"]["slots"]) > 1 for c in BUILT) >= 40


@pytest.mark.parametrize("entry", CONFIGS, ids=lambda c: c["id"])
def test_emit_reproduces_the_recorded_settings(entry):
    now = loop.emitted(entry["config"])
    if "emit_refused" in entry:
        assert now == {"refused": entry["emit_refused"]}
        return
    assert now["fields"] == entry["emitted"]["fields"]
    assert now["capacity"] == entry["emitted"]["capacity"]


@pytest.mark.parametrize("entry", BUILT, ids=lambda c: c["id"])
def test_the_engine_builds_at_least_kvgen_pages_in_every_pool(entry):
    emit, engine = entry["emitted"], entry["engine"]
    quota = emit["fields"]["kv_cache_config"]["max_gpu_total_bytes"]
    # 16 GiB + 12,345 B in whole 32 MiB grains (the grain from 16 GiB): 16 GiB, which the
    # engine keeps as given.
    assert quota == 16 << 30 == engine["quota"]
    groups = loop.kvgen_groups(emit, engine)
    assert len(groups) == len(engine["slots"])
    for pool, slots in groups:
        assert pool["engine_pages"] == slots  # the pages emit reports are the engine's
        assert pool["planned_pages"] <= slots  # kvgen's pools at the capacity fit them
    capacity = emit["capacity"]
    assert capacity["max_concurrency"] >= 1  # every config serves a request of max_seq_len
    tpb = entry["config"]["tokens_per_block"]
    full = [p for p, _s in groups if "full" in p["life_cycles"]]
    if full:  # T tokens of full-attention history: ceil(T/tpb) pages of the full group
        assert capacity["kv_tokens"] // tpb == capacity["num_blocks"]


def test_gemma3_1b_emits_the_capacity_the_engine_split_holds():
    # gemma3_1b, tpb 64, 8,192 tokens, tp 1, B = 8, N = 8,192: slots of 1,441,792 B (22
    # window layers of 1,024 B a token) and 262,144 B (4 full layers). The grain from 16 GiB
    # is 2 MiB << 4 = 32 MiB, so the quota is 512 grains; the full group's ratio is
    # 262,144 / 1,703,936 = 2/13, round(512 x 2/13) = round(78.77) = 79 grains = 2,528 MiB /
    # 0.25 MiB = 10,112 slots; the window group 433 grains = 13,856 MiB / 1.375 MiB = 10,077
    # slots. kvgen plans 8 x pages(512, 1) + ceil(min(T, N)/64) = 8 x 9 + 128 = 200 window
    # pages at T >= N, so the full pages bound T: 10,112 x 64 = 647,168 tokens, 79 requests
    # of 8,192 at once, capped at max_batch_size 8.
    entry = next(c for c in CONFIGS if c["id"] == "gemma3_1b/t64/s8192/tp1/none")
    assert entry["engine"]["slots"] == [10_077, 10_112]
    pools = entry["emitted"]["capacity"]["engine_pools"]["target"]
    assert [(p["planned_pages"], p["engine_pages"]) for p in pools] == [(200, 10_077),
                                                                      (10_112, 10_112)]  # fmt: skip
    assert entry["emitted"]["capacity"]["kv_tokens"] == 647_168
    assert entry["emitted"]["capacity"]["max_concurrency"] == 8.0
