"""``engine_capacity(engine="trtllm==early-2026")`` against the pools TensorRT-LLM's KV cache
manager V2 built itself (``closed_loop`` in tests/fixtures/engines/trtllm.json: the early-2026
revision's ``KVCacheManager`` given each config's quota on CPU by
``bench/engines/trtllm_runner.py``, its ``StorageManager`` slots per pool group recorded; the
configs: tests/trtllm_closed_loop.py).

The engine's answer is its slots per pool group. What those slots hold is derived here from
them alone, by the page counts of docs/cost-model.md §3 and §4: at T tokens of full-attention
history kvgen's pools are k = ceil(T/tpb) pages per full life cycle and, per sliding life
cycle of window w, B * pages(w, H) + min(k, ceil(N/tpb)) pages, pages(w, H) = ceil((w + H -
2)/tpb) + 1 with H = E + G of the profile; life cycles in one pool group share its slots. The
largest k that fits every group gives T = k * tpb; without a full life cycle T is B x
max_seq_len once every context page fits, else the whole pages below N.
Both paths answer it: the rendered sizing module and ``kvgen._engines.capacity`` on the spec.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._spec.loader import load_family

from tests import trtllm_closed_loop as loop
from tests.workloads import ROOT

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "engines" / "trtllm.json"
BUILT = [c for c in json.loads(GOLDEN.read_text())["closed_loop"]["configs"] if "engine" in c]
B, N = loop.MAX_BATCH_SIZE, loop.MAX_NUM_TOKENS


def _largest(fits, high: int) -> int:
    low = 0  # fits(0) holds; the largest k in [0, high) with fits(k)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def held_by_the_engine_slots(entry: dict, headroom: int) -> dict:
    """kv_tokens, concurrency and blocks the engine's recorded slots hold (the module doc)."""
    config, built = entry["config"], entry["engine"]
    tpb, seq = config["tokens_per_block"], config["max_seq_len"]
    context = -(-N // tpb)
    cycles = built["life_cycles"]  # [window (None: full), sink blocks], registry order
    assert all(sinks == 0 for _w, sinks in cycles)  # no sink pages in these configs

    def fits(k: int) -> bool:
        planned = [0] * len(built["slots"])
        for (window, _sinks), group in zip(cycles, built["pool_group_of"], strict=True):
            if window is None:
                planned[group] += k
            else:
                pages = -(-(window + headroom - 2) // tpb) + 1
                planned[group] += B * pages + min(k, context)
        return all(p <= s for p, s in zip(planned, built["slots"], strict=True))

    assert fits(0)  # every config serves its B requests' window pages
    if any(window is None for window, _s in cycles):
        tokens = _largest(fits, max(built["slots"]) + 1) * tpb
    elif fits(context):
        tokens = B * seq  # every request reaches max_seq_len: nothing grows past N
    else:
        tokens = min(_largest(fits, context) * tpb, N - 1)
    return {"kv_tokens": tokens, "max_concurrency": min(tokens / seq, float(B)),
            "num_blocks": tokens // tpb}  # fmt: skip


def _answered(capacity) -> dict:
    return {k: getattr(capacity, k) for k in ("kv_tokens", "max_concurrency", "num_blocks")}


@pytest.mark.parametrize("entry", BUILT, ids=lambda c: c["id"])
def test_engine_capacity_holds_what_the_engine_pools_hold(entry):
    config = entry["config"]
    module = loop.rendered(config["family"], config["tokens_per_block"]).sizing
    profile = module.TABLES.profiles[config["speculative"]]
    expected = held_by_the_engine_slots(entry, profile.extra + profile.step)
    kwargs = {"engine": "trtllm==early-2026", "max_seq_len": config["max_seq_len"],
              "max_num_tokens": N, "max_batch_size": B, "speculative": config["speculative"],
              "tp_size": config["tp_size"]}  # fmt: skip
    generated = module.engine_capacity(config["model"], loop.BUDGET, **kwargs)
    assert _answered(generated) == expected
    family = load_family(ROOT / "schema" / "families" / f"{config['family']}.yaml")
    api = engine_capacity(
        family, config["model"], loop.BUDGET, block_size=config["tokens_per_block"], **kwargs
    )
    assert api == generated
    # --emit trtllm prints the same capacity, and the engine's slots as its pools' pages.
    emitted = entry["emitted"]["capacity"]
    assert {k: emitted[k] for k in expected} == expected
    assert emitted["request_bytes"] == generated.request_bytes


def test_gemma3_27b_holds_the_engine_full_slots_not_kvgen_pools():
    # The reproducer (on b490c43 engine_capacity answered kvgen's own pools for the budget,
    # 121,856 tokens, which the engine does not build). gemma3_27b, tpb 64, 8,192 tokens, tp 1,
    # B = 8, N = 8,192, budget 16 GiB + 12,345 B -> a quota of 512 grains of 32 MiB. Slots:
    # 52 window (1024) layers x 2 x 16 heads x 128 x 2 B x 64 = 27,262,976 B, 10 full layers
    # 5,242,880 B; the full group's ratio is 5/31: round(512 x 5/31) = round(82.58) = 83
    # grains = 2,656 MiB / 5 MiB = 531 slots; the window group 429 grains = 13,728 MiB / 26
    # MiB = 528 slots (the engine recorded [528, 531]). kvgen's window pages: 8 x pages(1024,
    # 1) + ceil(8192/64) = 8 x (ceil(1023/64) + 1) + 128 = 264 <= 528, so the 531 full slots
    # bound T: 531 x 64 = 33,984 tokens, 33,984 / 8,192 = 4.1484375 requests, 531 blocks.
    entry = next(c for c in BUILT if c["id"] == "gemma3_27b/t64/s8192/tp1/none")
    assert entry["engine"]["slots"] == [528, 531]
    from generated.gemma3 import sizing

    assert sizing.TOKENS_PER_BLOCK == 64
    capacity = sizing.engine_capacity(
        "gemma3_27b", loop.BUDGET, engine="trtllm==early-2026", max_seq_len=8192,
        max_num_tokens=8192, max_batch_size=8,
    )  # fmt: skip
    assert (capacity.kv_tokens, capacity.max_concurrency, capacity.num_blocks) == (
        33_984, 4.1484375, 531,
    )  # fmt: skip
    from kvgen.sizing._trtllm_pools import engine_plan_for_quota

    tokens, pools = engine_plan_for_quota(
        sizing, "gemma3_27b", {"target": 16 << 30}, max_batch_size=8, max_num_tokens=8192,
        max_seq_len=8192,
    )["target"]  # fmt: skip
    assert tokens == 33_984
    assert [(p.life_cycles, p.planned_pages, p.engine_pages) for p in pools] == [
        (("swa1024",), 264, 528), (("full",), 531, 531),
    ]  # fmt: skip


def test_a_quota_under_one_grain_per_pool_is_refused_as_the_engine_asserts():
    # gemma3_27b (tpb 64): 3 MiB in whole grains of 2 MiB (the grain below 2 GiB) is 2 MiB,
    # which the engine raises to one grain per pool group, 4 MiB = 2 grains; the least
    # grains of its slots, 13 for the window group's 26 MiB and 3 for the full group's
    # 5 MiB, overrun them (the engine asserts in CacheLevelStorage).
    from generated.gemma3 import sizing

    with pytest.raises(ValueError, match="least grain per pool overruns"):
        sizing.engine_capacity(
            "gemma3_27b",
            3 << 20,
            engine="trtllm==early-2026",
            max_seq_len=8192,
            max_num_tokens=8192,
        )
