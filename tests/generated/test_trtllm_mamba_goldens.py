"""``kvgen.sizing._trtllm_budget.hybrid_cost`` (revision 38198e34) against TensorRT-LLM's own
functions.

At 38198e34 a Mamba hybrid's attention pages and recurrent states share one V2 manager
(``MambaHybridCacheManagerV2``). Under block reuse with ``periodic_snapshot_interval`` P it
keeps a state snapshot every P tokens of history, so its static cost is
``(T + B x tpb) x a + (B + r + ceil(T / P)) x s``-shaped: ``_estimate_mamba_hybrid_cache_cost``
charges ``ceil(s / P)`` per token and one partial attention page per request; its runtime
conversions count ``T // P`` snapshot slots. ``tests/fixtures/engines/trtllm_static.json``
(``mamba_hybrids``) holds what those functions returned on CPU (``bench/engines/
trtllm_oracle.py``) for every shipped hybrid of separate full-attention and Mamba layers
(nemotron_h 4b/8b, granite 4.0-H tiny, Jamba 1.5 mini, Qwen3-Next 80B), B 8, without block
reuse, with it and no periodic snapshots, and with snapshots every 256 and 1,000 tokens.
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
ROWS = GOLDEN["mamba_hybrids"]


def _cost(row: dict) -> tb.HybridCost:
    sizing = importlib.import_module(f"generated.{row['family']}.sizing")
    return tb.hybrid_cost(
        sizing, row["model"], max_batch_size=row["max_batch_size"],
        max_seq_len=row["max_seq_len"], enable_block_reuse=row["enable_block_reuse"],
        periodic_snapshot_interval=row["periodic_snapshot_interval"],
    )  # fmt: skip


def test_the_golden_covers_every_separate_layer_hybrid_under_every_snapshot_setting():
    models = {r["model"] for r in ROWS}
    assert models == {"nemotron_h_8b", "nemotron_h_4b", "granite_4_0_h_tiny", "jamba_1_5_mini",
                      "qwen3_next_80b_a3b"}  # fmt: skip
    for model in models:
        settings = {(r["enable_block_reuse"], r["periodic_snapshot_interval"])
                    for r in ROWS if r["model"] == model}  # fmt: skip
        assert settings == {(False, None), (True, None), (True, 256), (True, 1000)}
    # What is left out is named: MLA attention (Kimi Linear, Ling 2.5) and the parallel
    # hybrid layers of Falcon-H1, which hold attention and a state in one layer.
    assert len(GOLDEN["mamba_hybrids_not_covered"]) == 6


@pytest.mark.parametrize(
    "row", ROWS,
    ids=[f"{r['model']}-reuse{r['enable_block_reuse']}-P{r['periodic_snapshot_interval']}"
         for r in ROWS],
)  # fmt: skip
def test_static_cost_and_conversions_equal_the_engine(row):
    cost = _cost(row)
    assert (cost.slope, cost.intercept) == (row["slope"], row["intercept"])
    for tokens, quota in row["quota_for_tokens"].items():
        assert tb.hybrid_quota_for_tokens(cost, int(tokens)) == quota
    for quota, tokens in row["tokens_for_quota"].items():
        assert tb.hybrid_tokens_for_quota(cost, int(quota)) == tokens


def test_nemotron_h_8b_snapshots_by_hand():
    # nemotron_h_8b: 4 attention layers of 8 KV heads x 128 x 2 (K, V) x 2 B = 16,384 B/token;
    # 24 Mamba layers of 128 heads x 64, d_state 128, 8 groups, d_conv 4, bf16: conv
    # (128 x 64 + 2 x 8 x 128) x 3 x 2 B = 61,440 B, SSM 128 x 64 x 128 x 2 B = 2,097,152 B:
    # s = 24 x 2,158,592 = 51,806,208 B per slot.
    row = next(r for r in ROWS if r["model"] == "nemotron_h_8b"
               and r["periodic_snapshot_interval"] == 256)  # fmt: skip
    cost = _cost(row)
    a, s = cost.attention_bytes_per_token, cost.state_bytes
    assert a == 4 * 8 * 128 * 2 * 2 == 16_384
    assert s == 24 * ((128 * 64 + 2 * 8 * 128) * 3 * 2 + 128 * 64 * 128 * 2) == 51_806_208
    # B 8, one reserved slot, snapshots every 256 tokens: slope a + ceil(s / 256), intercept
    # 9 states and one partial page of 64 tokens per request.
    assert row["slope"] == a + math.ceil(s / 256)
    assert row["intercept"] == 9 * s + 8 * a * 64
    # Without periodic snapshots the state costs no slope and no partial pages.
    plain = next(r for r in ROWS if r["model"] == "nemotron_h_8b" and r["enable_block_reuse"]
                 and r["periodic_snapshot_interval"] is None)  # fmt: skip
    assert (plain["slope"], plain["intercept"]) == (a, 9 * s)
    # At runtime 50,000 tokens keep 50,000 // 256 = 195 snapshots beside the 9 live states.
    assert row["quota_for_tokens"]["50000"] == 50_000 * a + (9 + 195) * s + 8 * a * 64


def test_a_parallel_hybrid_and_a_draft_pool_are_refused():
    falcon = importlib.import_module("generated.falcon_h1.sizing")
    with pytest.raises(ValueError, match="parallel hybrid"):
        tb.hybrid_cost(falcon, "falcon_h1_7b_instruct", max_batch_size=8, max_seq_len=32768)
