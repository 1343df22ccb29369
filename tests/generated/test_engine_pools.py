"""kvgen.sizing._trtllm_pools: kvgen's serving plan as TensorRT-LLM V2 pool groups, the pages the
engine builds for a quota, and the least quota under the engine's split (issue 20).

The engine side is proven in tests/generated/test_trtllm_goldens.py (the engine's own runs);
here the static functions are checked against hand derivations and against
``quota_for_requests`` of every shipped family they cover."""

from __future__ import annotations

from pathlib import Path

import pytest
from kvgen._engines.planner import load_sizing
from kvgen.sizing._trtllm_pools import (
    engine_pool_plan,
    engine_pool_ratio,
    engine_pools,
    engine_quota_for_requests,
)
from kvgen.sizing.trtllm_split import PoolGroup, gpu_grain, slots_for_quota

ROOT = Path(__file__).resolve().parents[2]
SERVING = {"requests": 4, "seq_len": 2048, "max_num_tokens": 256}


def test_gemma3_1b_by_hand():
    # H = 1 (no speculation), tpb 64: full pages 4 x ceil(2047/64) = 128 of 262,144 B; the
    # window (512) pages 4 x pages(512, 1) + ceil(256/64) = 4 x 9 + 4 = 40 of 1,441,792 B
    # (docs/cost-model.md §3): kvgen's pools are 91,226,112 B, from which the engine builds
    # 53 window + 56 full slots (tests/unit/test_trtllm_split.py).
    sizing = load_sizing("gemma3")
    pools_bytes = {"target": 128 * 262_144 + 40 * 1_441_792}
    pools = engine_pools(sizing, "gemma3_1b", pools_bytes, **SERVING)["target"]
    assert [(p.life_cycles, p.slot_bytes, p.planned_pages, p.engine_pages) for p in pools] == [
        (("swa512",), 1_441_792, 40, 53),
        (("full",), 262_144, 128, 56),
    ]
    assert [p.short for p in pools] == [0, 72]
    # quota_for_requests under "trtllm-v2" answers the engine's least quota instead: 101
    # grains of 2 MiB (tests/unit/test_trtllm_split.py derives it), 128 full pages.
    quota = sizing.quota_for_requests("gemma3_1b", semantics="trtllm-v2", **SERVING)
    assert quota == {"target": 101 * (2 << 20)} == {"target": 211_812_352}
    assert engine_quota_for_requests(sizing, "gemma3_1b", **SERVING) == quota
    again = engine_pools(sizing, "gemma3_1b", quota, **SERVING)["target"]
    assert [p.engine_pages for p in again] == [123, 128]
    assert [p.short for p in again] == [0, 0]


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


def _shipped():
    for sizing_path in sorted((ROOT / "generated").glob("*/sizing.py")):
        sizing = load_sizing(sizing_path.parent.name)
        for model in sizing.MODELS:
            for profile in sizing.PROFILES[model]:
                yield sizing_path.parent.name, model, profile


SHIPPED = list(_shipped())


@pytest.mark.parametrize(("family", "model", "profile"), SHIPPED)
@pytest.mark.parametrize("seq_len", [2048, 16384])
def test_quota_for_requests_holds_kvgen_pages_in_every_engine_group(
    family, model, profile, seq_len
):
    # Every shipped model and profile: under "trtllm-v2" the quota is one from which the
    # engine's split builds at least kvgen's pages in every pool group, and it is the least
    # such quota (one grain less builds fewer pages somewhere) wherever several groups share
    # it; with one group it is kvgen's own pool bytes, which the engine rounds up.
    sizing = load_sizing(family)
    serving = dict(SERVING, seq_len=min(seq_len, sizing.MAX_SEQ_LEN[model]), speculative=profile)
    try:
        quota = sizing.quota_for_requests(model, semantics="trtllm-v2", **serving)
    except ValueError as exc:  # SWA scratch reuse only; scratch_reuse is off here
        pytest.fail(str(exc))
    try:
        plan = engine_pool_plan(sizing, model, **serving)
    except ValueError:  # recurrent, cross, DCP, a resume-rounded draft: outside the split
        pytest.skip("a manager the static pool plan does not cover")
    assert engine_quota_for_requests(sizing, model, **serving) == {m: quota[m] for m in plan}
    for manager, pools in plan.items():
        groups = [PoolGroup((p.slot_bytes,), len(p.life_cycles)) for p in pools]
        built = slots_for_quota(quota[manager], groups)
        assert all(b >= p.planned_pages for b, p in zip(built, pools, strict=True))
        own = sum(p.slot_bytes * p.planned_pages for p in pools)
        if len(pools) == 1:
            assert quota[manager] == own
            continue
        assert quota[manager] >= own
        assert quota[manager] % gpu_grain(quota[manager]) == 0
        less = slots_for_quota(quota[manager] - gpu_grain(quota[manager]), groups)
        assert any(b < p.planned_pages for b, p in zip(less, pools, strict=True))


def test_single_group_managers_keep_kvgen_pools_and_the_engine_builds_them():
    # llama3_1_8b (one full group): 4 x ceil(2047/32) = 256 pages of 32 x 131,072 B = 4 MiB,
    # 1 GiB: kvgen's pools, 512 grains of 2 MiB, which the engine splits into 256 slots.
    sizing = load_sizing("llama3")
    quota = sizing.quota_for_requests("llama3_1_8b", semantics="trtllm-v2", **SERVING)
    assert quota == {"target": 256 * (4 << 20)}
    assert slots_for_quota(quota["target"], [PoolGroup((4 << 20,))]) == (256,)
    # gpt_oss_20b's full and window life cycles share one group (test below): 144 pages.
    sizing = load_sizing("gpt_oss")
    quota = sizing.quota_for_requests("gpt_oss_20b", semantics="trtllm-v2", **SERVING)
    assert quota == {"target": 144 * 786_432}
    assert slots_for_quota(quota["target"], [PoolGroup((786_432,), 2)]) == (144,)


def test_scratch_reuse_beside_another_group_is_refused():
    sizing = load_sizing("gemma3")
    with pytest.raises(ValueError, match=r"scratch reuse.*semantics=.exact."):
        sizing.quota_for_requests("gemma3_1b", semantics="trtllm-v2", scratch_reuse=True, **SERVING)
    # "exact" (kvgen's own pools) still answers.
    assert sizing.quota_for_requests("gemma3_1b", semantics="exact", scratch_reuse=True,
                                     **SERVING)["target"] > 0  # fmt: skip


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
