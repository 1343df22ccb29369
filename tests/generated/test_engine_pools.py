"""kvgen.trtllm_pools: kvgen's serving plan as TensorRT-LLM V2 pool groups, the pages the
engine builds for a quota, and the least quota under the engine's split (issue 20).

The engine side is proven in tests/generated/test_trtllm_goldens.py (the engine's own runs);
here the static functions are checked against hand derivations and against
``quota_for_requests`` of every shipped family they cover."""

from __future__ import annotations

import pytest
from kvgen.planner import load_sizing
from kvgen.trtllm_pools import (
    engine_pool_plan,
    engine_pool_ratio,
    engine_pools,
    engine_quota_for_requests,
)
from kvgen.trtllm_split import PoolGroup, gpu_grain, slots_for_quota

SERVING = {"requests": 4, "seq_len": 2048, "max_num_tokens": 256}


def test_gemma3_1b_by_hand():
    # H = 1 (no speculation), tpb 64: full pages 4 x ceil(2047/64) = 128 of 262,144 B; the
    # window (512) pages 4 x pages(512, 1) + ceil(256/64) = 4 x 9 + 4 = 40 of 1,441,792 B
    # (docs/cost-model.md §3). The engine splits the 91,226,112 B into 53 window + 56 full.
    sizing = load_sizing("gemma3")
    quota = sizing.quota_for_requests("gemma3_1b", semantics="trtllm-v2", **SERVING)
    assert quota == {"target": 128 * 262_144 + 40 * 1_441_792}
    pools = engine_pools(sizing, "gemma3_1b", quota, **SERVING)["target"]
    assert [(p.life_cycles, p.slot_bytes, p.planned_pages, p.engine_pages) for p in pools] == [
        (("swa512",), 1_441_792, 40, 53),
        (("full",), 262_144, 128, 56),
    ]
    assert [p.short for p in pools] == [0, 72]
    # 101 grains of 2 MiB (tests/unit/test_trtllm_split.py derives it): 128 full pages.
    enough = engine_quota_for_requests(sizing, "gemma3_1b", **SERVING)
    assert enough == {"target": 101 * (2 << 20)}
    again = engine_pools(sizing, "gemma3_1b", enough, **SERVING)["target"]
    assert [p.engine_pages for p in again] == [123, 128]


def test_gpt_oss_20b_shares_one_group():
    # 12 full and 12 window (128) layers, each K+V of 8 heads x 64 in fp8 = 1,024 B a token:
    # both life cycles have 64 x 12 x 1,024 = 786,432 B slots: one engine pool group of 144
    # pages, 4 x ceil(2047/64) = 128 full + 4 x pages(128, 1) + ceil(256/64) = 4 x 3 + 4 = 16
    # window pages (pages(128, 1) = ceil(127/64) + 1 = 3), so the engine needs kvgen's quota.
    sizing = load_sizing("gpt_oss")
    (pool,) = engine_pool_plan(sizing, "gpt_oss_20b", **SERVING)["target"]
    assert (pool.life_cycles, pool.slot_bytes, pool.planned_pages) == (
        ("swa128", "full"),
        786_432,
        144,
    )
    quota = sizing.quota_for_requests("gpt_oss_20b", semantics="trtllm-v2", **SERVING)
    assert engine_quota_for_requests(sizing, "gpt_oss_20b", **SERVING) == quota


@pytest.mark.parametrize(
    ("family", "model"),
    [("llama3", "llama3_1_8b"), ("gemma3", "gemma3_27b"), ("gemma3", "gemma3_4b"),
     ("gemma2", "gemma2_9b"), ("gpt_oss", "gpt_oss_120b"), ("mistral", "mistral_7b_v0_1"),
     ("qwen3", "qwen3_8b")],
)  # fmt: skip
def test_engine_quota_holds_kvgen_pages_in_every_group(family, model):
    sizing = load_sizing(family)
    if model not in sizing.MODELS:
        pytest.skip(f"{family} has no {model}")
    kvgen = sizing.quota_for_requests(model, semantics="trtllm-v2", **SERVING)
    plan = engine_pool_plan(sizing, model, **SERVING)
    enough = engine_quota_for_requests(sizing, model, **SERVING)
    for manager, pools in plan.items():
        # The plan is exactly kvgen's quota, page for page.
        assert sum(p.slot_bytes * p.planned_pages for p in pools) == kvgen[manager]
        groups = [PoolGroup((p.slot_bytes,), len(p.life_cycles)) for p in pools]
        built = slots_for_quota(enough[manager], groups)
        assert all(b >= p.planned_pages for b, p in zip(built, pools, strict=True))
        assert enough[manager] >= kvgen[manager]
        # ... and is the least such quota in the engine's grain (2 MiB << k, k from the size).
        less = slots_for_quota(enough[manager] - gpu_grain(enough[manager]), groups)
        assert any(b < p.planned_pages for b, p in zip(less, pools, strict=True))


def test_recurrent_managers_are_refused():
    sizing = load_sizing("qwen3_next")
    model = next(iter(sizing.MODELS))
    with pytest.raises(ValueError, match="attention-only"):
        engine_pool_plan(sizing, model, **SERVING)


def test_the_ratio_for_later_revisions_is_kvgen_bytes_per_group():
    # gemma3_1b: 40 x 1,441,792 = 57,671,680 B of window pages and 128 x 262,144 = 33,554,432
    # B of full pages, of 91,226,112 B.
    ratio = engine_pool_ratio(load_sizing("gemma3"), "gemma3_1b", **SERVING)["target"]
    assert ratio == [57_671_680 / 91_226_112, 33_554_432 / 91_226_112]
