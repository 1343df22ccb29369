"""``kvgen.sizing._trtllm_budget`` (revision "38198e34") against TensorRT-LLM's own functions.

``tests/fixtures/engines/trtllm_static.json`` holds what the engine's static estimator at
NVIDIA/TensorRT-LLM 38198e34 returned on CPU (``bench/engines/trtllm_oracle.py``): for every
shipped draft pair (29 of them, B 8, N 8192, S = min(32768, the model's context), at 40 and
12 GiB, with and without ``avg_seq_len`` = S) both managers' ``CacheCost`` (slope, intercept,
per-request spend, per-request quota) and the GPU and host splits; for every model that mixes
sliding and full layers, the target's costs. kvgen derives each from its own terms; every
number must be equal.
"""

import importlib
import json
import math
from pathlib import Path

import pytest
from kvgen.sizing import _trtllm_budget as tb

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[2] / "tests/fixtures/engines/trtllm_static.json").read_text()
)
GIB = 1 << 30


def _sizing(family: str):
    return importlib.import_module(f"generated.{family}.sizing")


def _common(row: dict) -> dict:
    return {"max_batch_size": row["max_batch_size"], "max_num_tokens": row["max_num_tokens"],
            "max_seq_len": row["max_seq_len"]}  # fmt: skip


def _ids(rows: list[dict]) -> list[str]:
    return [
        f"{r['model']}-{r.get('speculative', 'none')}-{r.get('budget_bytes', 0) // GIB}g-"
        f"avg{r['avg_seq_len']}"
        for r in rows
    ]


SPLITS = GOLDEN["splits"]
TARGETS = GOLDEN["targets"]


def test_the_golden_covers_every_shipped_draft_pair_at_two_budgets_with_and_without_avg():
    pairs = {(r["model"], r["speculative"]) for r in SPLITS}
    assert len(pairs) == 29 and not GOLDEN["splits_not_covered"]
    for pair in pairs:
        rows = [r for r in SPLITS if (r["model"], r["speculative"]) == pair]
        assert {(r["budget_bytes"], r["avg_seq_len"] is None) for r in rows} == {
            (40 * GIB, True), (40 * GIB, False), (12 * GIB, True), (12 * GIB, False)
        }  # fmt: skip


@pytest.mark.parametrize("row", SPLITS, ids=_ids(SPLITS))
def test_costs_and_split_equal_the_engine(row):
    sizing = _sizing(row["family"])
    common = {**_common(row), "speculative": row["speculative"]}
    costs = tb.manager_costs(sizing, row["model"], avg_seq_len=row["avg_seq_len"],
                             revision="38198e34", **common)  # fmt: skip
    for manager in ("target", "draft"):
        assert costs[manager]._asdict() == row[manager], manager
    budget = row["budget_bytes"]
    if "refused" in row:
        with pytest.raises(ValueError, match="fixed costs"):
            tb.split_budget(sizing, row["model"], budget, revision="38198e34",
                            avg_seq_len=row["avg_seq_len"], **common)  # fmt: skip
    else:
        got = tb.split_budget(sizing, row["model"], budget, revision="38198e34",
                              avg_seq_len=row["avg_seq_len"], **common)  # fmt: skip
        assert got == row["shares"]
    host = tb.split_budget(sizing, row["model"], 64 * GIB, tier="host", revision="38198e34",
                           **common)  # fmt: skip
    assert host == row["host_shares"]


@pytest.mark.parametrize("row", TARGETS, ids=_ids(TARGETS))
def test_sliding_window_targets_equal_the_engine(row):
    costs = tb.manager_costs(_sizing(row["family"]), row["model"], avg_seq_len=row["avg_seq_len"],
                             revision="38198e34", **_common(row))  # fmt: skip
    assert costs["target"]._asdict() == row["target"]


def test_gemma3_27b_with_draft_1b_at_40_gib_by_hand():
    # S 32768, H = E + G = 3 + 5 = 8 (draft_target, K 4): full = ceil(32776/64) x 64 = 32,832.
    # draft_1b: 26 layers of 1 x 256 x 2 x 2 = 1,024 B/token, 22 of window 512 keeping
    # ceil((512 + 8 - 2)/64) + 1 = 10 pages = 640 tokens in its intercept; every mirror is
    # reserved at the full context: 26 x 1,024 x 32,832 - 22 x 1,024 x 640 = 859,701,248 B.
    # target gemma3_27b: 10 full layers of 16 x 128 x 2 x 2 = 8,192 B/token: 81,920 x 32,832 =
    # 2,689,597,440 B (its 52 window layers are in its intercept, 7,415,529,472 B).
    sizing = _sizing("gemma3")
    common = {"max_batch_size": 8, "max_num_tokens": 8192, "max_seq_len": 32768,
              "speculative": "draft_1b"}  # fmt: skip
    costs = tb.manager_costs(sizing, "gemma3_27b", revision="38198e34", **common)
    assert costs["draft"].bytes_per_request == 859_701_248
    assert costs["target"].bytes_per_request == 2_689_597_440
    # room = 40 GiB - 7,415,529,472 - 299,892,736; its draft part room x 859,701,248 /
    # (2,689,597,440 + 859,701,248) = 8,167,... exceeds 8 mirrors (6,877,609,984), so the
    # cap binds: draft = 299,892,736 + 6,877,609,984 = 7,177,502,720 B.
    shares = tb.split_budget(sizing, "gemma3_27b", 40 * GIB, revision="38198e34", **common)
    assert shares["draft"] == 7_177_502_720
    # The early-2026 rule splits the room by slope: 4,096 / (81,920 + 4,096) of it.
    early = tb.split_budget(sizing, "gemma3_27b", 40 * GIB, revision="early-2026", **common)
    assert early == sizing.split_budget("gemma3_27b", 40 * GIB, **common)
    assert early["draft"] == 1_977_714_200
    # With avg_seq_len 32768 one mirror's quota, ceil(513 / float32(0.95)) = 541 pages x 64 x
    # 1,024 B per layer = 35,454,976 B, rounded to the 2 MiB grain of its sum (26 x that,
    # under 1 GiB): 17 x 2 MiB = 35,651,584 B x 26 = 926,941,184 B, caps at 8 of them.
    with_avg = tb.split_budget(sizing, "gemma3_27b", 40 * GIB, revision="38198e34",
                               avg_seq_len=32768, **common)  # fmt: skip
    assert with_avg["draft"] == 299_892_736 + 8 * 926_941_184 == 7_715_422_208


def test_conversions_and_the_multi_rank_sync_equal_the_engine():
    batch, chunk = 8, 2048
    # The golden's layers (4 full + 20 window-1024 layers of 4,096 B/token, tpb 32, B 8,
    # N 2048) through kvgen's own affine terms: slope 4 x 4,096; per request 20 x 4,096 x
    # pages(1024, H) x 32; ctx_swa 20 x 4,096, with scratch reuse one layer per (window,
    # bytes): 4,096 (the context call's per-request part is not read).
    for row in GOLDEN["conversions"]:
        head, tpb = row["headroom"], 32
        pages = -(-(1024 + head - 2) // tpb) + 1
        slope, per_request = 4 * 4096, 20 * 4096 * pages * tpb
        ctx = (1 if row["scratch"] else 20) * 4096

        def quota_for(tokens, slope=slope, ctx=ctx, per_request=per_request):
            context = min(tokens, chunk)
            return context * (slope + ctx) + (tokens - context) * slope + batch * per_request

        def tokens_for(quota, slope=slope, ctx=ctx, per_request=per_request):
            fixed = batch * per_request
            if quota < fixed:
                return 0
            if quota <= chunk * (slope + ctx) + fixed:
                return (quota - fixed) / (slope + ctx)
            return chunk + (quota - chunk * (slope + ctx) - fixed) / slope

        for tokens, quota in row["quota_for_tokens"].items():
            assert quota_for(int(tokens)) == quota
        for quota, tokens in row["tokens_for_quota"].items():
            assert tokens_for(int(quota)) == tokens
        ranks = row["ranks"]
        assert (
            tb.synced_quota(ranks["quotas"], quota_for, tokens_for, 0.95) == ranks["synced_quotas"]
        )


@pytest.mark.parametrize("row", GOLDEN["host_tier"], ids=lambda r: str(sorted(r.items())))
def test_host_tier_equals_the_engine(row):
    got = tb.host_tier_quota(
        row["quota"], row["local_ranks"],
        math.inf if row["mem_available"] is None else row["mem_available"],
        math.inf if row["memlock_limit"] is None else row["memlock_limit"],
        row["shares_device_memory"],
    )  # fmt: skip
    assert got == row["host_quota"]


@pytest.mark.parametrize("quota", [0, 1, (1 << 30) - 1, 1 << 30, 3 << 30, (16 << 30) + 5, 1 << 40])
def test_gpu_alloc_granularity(quota):
    # 2 MiB << min(4, floor(log2(quota // 1 GiB))), 2 MiB below 1 GiB: by hand.
    want = {0: 2, 1: 2, (1 << 30) - 1: 2, 1 << 30: 2, 3 << 30: 4, (16 << 30) + 5: 32,
            1 << 40: 32}[quota] << 20  # fmt: skip
    assert tb.gpu_alloc_granularity(quota) == want


def test_an_unknown_revision_is_refused():
    with pytest.raises(ValueError, match="revision must be one of"):
        tb.split_budget(_sizing("gemma3"), "gemma3_27b", 40 * GIB, revision="1.4",
                        max_batch_size=8, max_num_tokens=8192, max_seq_len=32768,
                        speculative="draft_1b")  # fmt: skip


@pytest.mark.parametrize(
    "row",
    GOLDEN["typical_step"],
    ids=lambda r: f"{r['avg_seq_len']}-{r['pool_ratio']}-{r['max_draft_len']}",
)
def test_pool_split_inputs_equal_the_engine(row):
    # The manager of the golden: B 4, N 2048, S 8192, K draft tokens with E = max(0, K - 1)
    # (one-engine modes). E.g. avg 4096, K 4: a context request of 2048 + 3 = 2051 tokens and
    # 3 requests of 4096 with history 4096 - 4 - 1 = 4091.
    got = tb.pool_split_inputs(
        max_batch_size=row["max_batch_size"], max_num_tokens=row["max_num_tokens"],
        max_seq_len=row["max_seq_len"], extra_tokens=max(0, row["max_draft_len"] - 1),
        max_draft_len=row["max_draft_len"], avg_seq_len=row["avg_seq_len"],
        pool_ratio=None if row["pool_ratio"] is None else tuple(row["pool_ratio"]),
    )  # fmt: skip
    as_lists = {
        "typical_step": None
        if got["typical_step"] is None
        else [list(d) for d in got["typical_step"]],
        "constraints": [[list(d) for d in batch] for batch in got["constraints"]],
        "initial_pool_ratio": got["initial_pool_ratio"],
    }
    assert as_lists == {k: row[k] for k in ("typical_step", "constraints", "initial_pool_ratio")}
    if row["avg_seq_len"] == 4096 and row["max_draft_len"] == 4:
        assert got["typical_step"] == [(2051, 0, 1)] + [(4096, 4091, 1)] * 3
