"""kvgen.sizing.trtllm_split against TensorRT-LLM V2's own pool split: by hand, and replayed from
the pools the engine built for recorded quotas (tests/fixtures/engines/trtllm.json, written by
bench/engines/trtllm_runner.py from the engine's code run on CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen.sizing.trtllm_split import (
    PoolGroup,
    adjusted_quota,
    gpu_grain,
    group_life_cycles,
    least_quota,
    slots_for_quota,
)

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "engines" / "trtllm.json"
MIB = 1 << 20

# gemma3_1b (tpb 64, bf16): the full group holds 4 layers x K+V x 1 head x 256 x 2 B = 4,096 B
# a token, a slot of 64 x 4,096 = 262,144 B; the window group 22 layers: 64 x 22,528 =
# 1,441,792 B. Registry order: layer 0 is a window layer, so the window group comes first.
GEMMA3_1B = [PoolGroup((1_441_792,)), PoolGroup((262_144,))]


def test_grain_by_hand():
    # 2 MiB << min(4, max(0, int(log2(q / 1 GiB)))).
    assert gpu_grain(91_226_112) == 2 * MIB  # log2 < 0
    assert gpu_grain((5 << 29) + 12345) == 4 * MIB  # 2.5 GiB: int(1.32) = 1
    assert gpu_grain((17 << 30) + 7) == 32 * MIB  # int(4.09) = 4, the cap
    assert gpu_grain(1 << 40) == 32 * MIB
    with pytest.raises(ValueError):
        gpu_grain(0)


def test_gemma3_1b_quota_for_requests_by_hand():
    # kvgen's 128 full + 40 window pages: 128 x 262,144 + 40 x 1,441,792 = 91,226,112 B,
    # 43.5 grains, rounded up to 44 (92,274,688 B). Ratio of the full group: 262,144 /
    # 1,703,936 = 0.1538 (smallest first): round(44 x 0.1538) = round(6.77) = 7 grains =
    # 14 MiB / 262,144 = 56 slots; the window group the other 37 grains: 77,594,624 /
    # 1,441,792 = 53.8 -> 53 slots.
    assert adjusted_quota(91_226_112, GEMMA3_1B) == 44 * 2 * MIB
    assert slots_for_quota(91_226_112, GEMMA3_1B) == (53, 56)


def test_least_quota_gives_every_group_its_pages_by_hand():
    # 128 full slots are 32 MiB = 16 grains: round(G x 0.153846) >= 16 first at G = 101
    # (round(15.54) = 16; G = 100 gives round(15.38) = 15). 101 grains = 211,812,352 B; the
    # window group gets 85 grains = 178,257,920 / 1,441,792 = 123.6 -> 123 >= 40 slots.
    quota = least_quota(GEMMA3_1B, [40, 128])
    assert quota == 101 * 2 * MIB
    assert slots_for_quota(quota, GEMMA3_1B) == (123, 128)
    assert slots_for_quota(quota - 2 * MIB, GEMMA3_1B)[1] < 128


def test_equal_slot_sizes_share_a_group():
    # The synthetic golden model: w100 s0, w100 s5 and full hold 16,384 B slots, w70 s20 8,192.
    group_of, groups = group_life_cycles([(16384,), (16384,), (8192,), (16384,)])
    assert group_of == [0, 0, 1, 0]
    assert groups == [PoolGroup((16384,), 3), PoolGroup((8192,), 1)]


def test_too_small_a_quota_gets_a_grain_per_pool():
    # One byte: the engine's least is one grain per pool, every group at least one slot.
    assert adjusted_quota(1, GEMMA3_1B) == 2 * 2 * MIB
    assert slots_for_quota(1, GEMMA3_1B) == (1, 8)


def _golden_probes():
    data = json.loads(GOLDEN.read_text())
    for entry in data["cases"]:
        if entry["seed"] != 1:
            continue
        for probe, built in zip(
            entry["inputs"]["quota_probes"], entry["engine"]["quota_pools"], strict=True
        ):
            for manager, described in built.items():
                if "refused" in described:  # the engine's assert: the groups of its run
                    described = dict(entry["engine"]["managers"][manager], **described)
                yield f"{entry['case']}/{manager}/{probe[manager]}", probe[manager], described


PROBES = list(_golden_probes())


@pytest.mark.parametrize(("quota", "engine"), [p[1:] for p in PROBES], ids=[p[0] for p in PROBES])
def test_split_equals_the_pools_the_engine_built(quota, engine):
    sizes = [tuple(engine["slot_bytes"][g]) for g in engine["pool_group_of"]]
    group_of, groups = group_life_cycles(sizes)
    assert group_of == engine["pool_group_of"]
    if "refused" in engine:  # its pools' least grains overrun the quota: refused alike
        assert "remaining_grains" in engine["refused"]
        with pytest.raises(ValueError, match="too small"):
            slots_for_quota(quota, groups)
        return
    assert adjusted_quota(quota, groups) == engine["quota"]
    assert list(slots_for_quota(quota, groups)) == engine["slots"]


def test_the_golden_probes_cover_every_grain():
    grains = {gpu_grain(q) for _id, q, _e in PROBES}
    assert {2 * MIB, 4 * MIB, 32 * MIB} <= grains
    assert len(PROBES) >= 40
    # gemma3_27b's 27,262,976 B window slot needs 13 grains of 2 MiB: 3 MiB + 1 B is refused.
    assert any("refused" in e for _id, _q, e in PROBES)


def test_the_issue_20_figures_by_hand():
    # kvgen's 93 full + 40 window pages: 93 x 262,144 + 40 x 1,441,792 = 82,051,072 B = 39.1
    # grains -> 40. Full: round(40 x 0.1538) = round(6.15) = 6 grains = 12 MiB / 262,144 = 48
    # slots; window: 34 grains = 71,303,168 / 1,441,792 = 49.5 -> 49 slots.
    assert slots_for_quota(93 * 262_144 + 40 * 1_441_792, GEMMA3_1B) == (49, 48)
    # 93 full slots are 23.25 MiB: 12 grains (96 slots). round(G x 0.153846) >= 12 first at
    # G = 75 (round(11.54) = 12; G = 74 gives round(11.38) = 11): 157,286,400 B.
    assert least_quota(GEMMA3_1B, [40, 93]) == 75 * 2 * MIB


def test_least_quota_is_the_least_at_a_16_mib_grain():
    # gemma3_4b, 4 requests to 16,384 tokens: 72 window (1024) pages of 7.25 MiB and 1,024 full
    # pages of 1.25 MiB (tpb 64). The full group's ratio is 1.25 / 8.5 = 5/34, and its pages
    # are 1,280 MiB = 80 grains of 16 MiB (the grain from 8 GiB): round(G x 5/34) >= 80 first
    # at G = 541 (79.56; 540 gives 79.41), 541 x 16 MiB = 8,656 MiB; the window group's 461
    # grains hold 7,376 / 7.25 = 1,017 slots. (The scan used to start 32 MiB below its bound,
    # one grain here, and answered 8,672 MiB.)
    groups = [PoolGroup((7_602_176,)), PoolGroup((1_310_720,))]
    quota = least_quota(groups, [72, 1024])
    assert quota == 541 * 16 * MIB
    assert slots_for_quota(quota, groups) == (1017, 1024)
    assert slots_for_quota(quota - 16 * MIB, groups)[1] < 1024
