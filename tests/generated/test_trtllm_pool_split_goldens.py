"""``kvgen.sizing._trtllm_pool_split`` (revision 38198e34) against TensorRT-LLM's own C++ pool
split.

At 38198e34 the split of one manager's GPU quota into pool groups is C++
(``StorageManager``, ``CacheLevelStorage::ratioToSlotCountList``). ``bench/engines/
trtllm_oracle.py`` cuts those functions verbatim from the engine's source text, compiles them
on CPU inside ``bench/engines/trtllm_pool_harness.cpp`` and records what they build in
``tests/fixtures/engines/trtllm_static.json`` (``pool_splits``): for every model that mixes
sliding and full layers (11), at 40 and 12 GiB, with ``avg_seq_len`` unset and = S and with an
explicit ``pool_ratio`` of [1/3, 2/3], the inputs come from the engine's own Python
(``_build_base_config`` with the windows ``_derive_v2_layer_type_attention_windows`` and
``_resolve_v2_max_attention_window_vec`` give). kvgen derives the same from its spec tables.
"""

import importlib
import json
from pathlib import Path

import pytest
from kvgen.sizing import _trtllm_pool_split as ps
from kvgen.sizing._trtllm_pools import engine_plan_for_split, engine_storage, engine_storage_split
from kvgen.sizing.facts import float32

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[2] / "tests/fixtures/engines/trtllm_static.json").read_text()
)
GIB = 1 << 30
ROWS = GOLDEN["pool_splits"]


def _sizing(family: str):
    return importlib.import_module(f"generated.{family}.sizing")


def _id(r: dict) -> str:
    return f"{r['model']}-{r['budget_bytes'] // GIB}g-avg{r['avg_seq_len']}-ratio{r['pool_ratio']}"


def test_the_golden_covers_every_sliding_window_family_at_two_budgets_with_and_without_avg():
    models = {(r["family"], r["model"]) for r in ROWS}
    assert {m for _f, m in models} == {r["model"] for r in GOLDEN["targets"]}  # the 11
    assert {f for f, _m in models} == {"cohere2", "gemma2", "gemma3", "gpt_oss"}
    for model in models:
        cases = {(r["budget_bytes"], r["avg_seq_len"] is None, r["pool_ratio"] is None)
                 for r in ROWS if (r["family"], r["model"]) == model}  # fmt: skip
        variants = ((True, True), (False, True), (True, False))  # (no avg, no ratio)
        assert cases == {(b, avg, ratio) for b in (40 * GIB, 12 * GIB)
                         for avg, ratio in variants}  # fmt: skip
    assert all("error" not in r["engine"] for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_pool_split_equals_the_engines_cpp(row):
    sizing = _sizing(row["family"])
    ratio = None if row["pool_ratio"] is None else {"target": row["pool_ratio"]}
    ((storage, split),) = engine_storage_split(
        sizing, row["model"], {"target": row["budget_bytes"]},
        max_batch_size=row["max_batch_size"], max_num_tokens=row["max_num_tokens"],
        max_seq_len=row["max_seq_len"], avg_seq_len=row["avg_seq_len"], pool_ratio=ratio,
    ).values()  # fmt: skip
    assert [[lc.window, lc.sink_blocks] for lc in storage.life_cycles] == row["life_cycles"]
    assert [list(sizes) for sizes in storage.slot_sizes] == row["slot_sizes"]
    assert list(split.group_of) == row["group_of"]
    assert [list(sizes) for sizes in split.slot_sizes] == row["group_slot_sizes"]
    got = {"slots": list(split.slots), "min_slots": list(split.min_slots),
           "ratio": list(split.ratio)}  # fmt: skip
    assert got == row["engine"]


def _row(model: str, budget: int, avg: int | None = None, ratio: bool = False) -> dict:
    return next(r for r in ROWS if r["model"] == model and r["budget_bytes"] == budget
                and r["avg_seq_len"] == avg and (r["pool_ratio"] is not None) == ratio)  # fmt: skip


def test_gemma3_27b_at_40_gib_by_hand():
    # tpb 64, B 8, N 8192, S 32768. Life cycles: window 1024 (52 layers of 16 x 128 x 2 x 2 =
    # 8,192 B/token: slots of 52 x 8,192 x 64 = 27,262,976 B) and full (10 layers:
    # 5,242,880 B); groups in ascending order of slot size: full first. 40 GiB: grain 32 MiB,
    # 1,280 grains. Floors: window 1024 keeps (1024 + 62) // 64 + 1 = 17 pages; full the same.
    row = _row("gemma3_27b", 40 * GIB)
    assert row["engine"]["min_slots"] == [17, 17]
    # Neither avg_seq_len nor pool_ratio: the fallback request of 2,049 tokens, 2,048 of them
    # history. Full: ceil(2049/64) = 33 pages x 5 MiB = 165 MiB -> 6 grains (192 MiB);
    # window: stale (2049 - 1024) // 64 = 16 of 33, 17 pages x 26 MiB = 442 MiB -> 14 grains
    # (448 MiB). Ratio full 192/640 = 0.3, window 0.7. The full group first (smaller ratio):
    # round(1280 x 0.3) = 384 grains = 12,288 MiB / 5 MiB = 2,457 slots (12,285 MiB = 384
    # grains); the window group the other 896 grains: 28,672 / 26 = 1,102 slots.
    assert row["engine"] == {"slots": [2457, 1102], "min_slots": [17, 17],
                             "ratio": [float32(0.3), float32(0.7)]}  # fmt: skip
    # kvgen's window pages: 8 x pages(1024, 1) = 8 x (ceil(1023/64) + 1) = 136, plus the 128
    # context pages: 264 fit 1,102; the full pool bounds T: 2,457 x 64 = 157,248 tokens.
    sizing = _sizing("gemma3")
    plan = engine_plan_for_split(sizing, "gemma3_27b", {"target": 40 * GIB}, max_batch_size=8,
                                 max_num_tokens=8192, max_seq_len=32768)  # fmt: skip
    tokens, pools = plan["target"]
    assert tokens == 2457 * 64 == 157_248
    assert [(p.life_cycles, p.planned_pages, p.engine_pages) for p in pools] == [
        (("swa1024",), 264, 1102), (("full",), 2457, 2457)
    ]  # fmt: skip


def test_gemma3_27b_with_avg_seq_len_starves_the_window_pool():
    # avg_seq_len = S = 32,768: the typical step is the context request (8,192 tokens, no
    # history) and 7 requests of 32,768 with history 32,767. Full: 128 + 7 x 512 = 3,712
    # pages = 18,560 MiB (580 grains); window: 128 + 7 x (512 - (32768 - 1024) // 64 = 16) =
    # 240 pages = 6,240 MiB (195 grains): ratio 195 / 775 = 0.2516. The constraint (one
    # context request, 128 pages in each cycle) raises every floor to ceil(128 / 0.95) = 135.
    row = _row("gemma3_27b", 40 * GIB, avg=32768)
    assert row["engine"]["min_slots"] == [135, 135]
    assert row["engine"]["slots"] == [6131, 396]
    # 396 window pages: kvgen's 8 requests keep 136 and a context 128; at 12 GiB the engine
    # pins the window group at its floor, 135 pages: not even 8 x 17 fit.
    low = _row("gemma3_27b", 12 * GIB, avg=32768)
    assert low["engine"]["slots"][1] == 135
    tokens, _pools = engine_plan_for_split(
        _sizing("gemma3"), "gemma3_27b", {"target": 12 * GIB}, max_batch_size=8,
        max_num_tokens=8192, max_seq_len=32768, avg_seq_len=32768,
    )["target"]  # fmt: skip
    assert tokens == 0


def test_gpt_oss_shares_one_pool_group():
    # gpt_oss_20b: 12 window-128 and 12 full layers of equal bytes: one pool group of both
    # life cycles, which gets the whole quota.
    row = _row("gpt_oss_20b", 40 * GIB)
    assert row["group_of"] == [0, 0] and len(row["engine"]["slots"]) == 1
    storage = engine_storage(_sizing("gpt_oss"), "gpt_oss_20b", max_seq_len=32768)
    assert storage.names == ("swa128", "full")


def test_engine_storage_counts_each_kind_by_its_layers():
    # gemma3_27b: 62 layers, pattern 5 sliding (window 1024) : 1 full, so 10 full rounds and
    # 2 sliding layers more: 52 sliding and 10 full. Each layer keeps a K and a V buffer of
    # ceil(16 KV heads / tp) x 128 dims x 2 bytes (bf16) x 64 tokens a page = 262,144 bytes
    # at tp 1; of equal size, they coalesce into one pool per cycle: 2 x 52 x 262,144 =
    # 27,262,976 (sliding) and 2 x 10 x 262,144 = 5,242,880 (full), the slot sizes of the
    # engine's storage (as test_explicit_ratio_is_checked_as_the_engine_checks_it's).
    storage = engine_storage(_sizing("gemma3"), "gemma3_27b", max_seq_len=32768)
    assert storage.names == ("swa1024", "full")
    assert storage.slot_sizes == ((27_262_976,), (5_242_880,))
    # At max_seq_len 1024 the window reaches the context: one full cycle of all 62 layers.
    storage = engine_storage(_sizing("gemma3"), "gemma3_27b", max_seq_len=1024)
    assert storage.names == ("full",) and storage.slot_sizes == ((2 * 62 * 262_144,),)


def test_engine_storage_refuses_a_recurrent_kind_by_name():
    # qwen3_next mixes gated-delta-net (recurrent) layers with full attention: not modelled at
    # 38198e34's pool split, said as such (it raised "too many values to unpack": a
    # recurrent kind's row was unpacked as an attention row before its kind was checked).
    with pytest.raises(ValueError, match="modelled for full and sliding attention"):
        engine_storage(_sizing("qwen3_next"), "qwen3_next_80b_a3b", max_seq_len=8192)


def test_explicit_ratio_is_checked_as_the_engine_checks_it():
    lcs = [ps.TrtllmLifeCycle(1024), ps.TrtllmLifeCycle(None)]
    sizes = [(27_262_976,), (5_242_880,)]
    for bad, message in (([0.5], "length must match"), ([0.0, 1.0], "must be positive"),
                         ([0.5, 0.6], "must sum to 1.0")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            ps.split_quota(40 * GIB, lcs, sizes, 64, initial_pool_ratio=bad)


@pytest.mark.parametrize(
    ("history", "window", "sinks", "want"),
    [(2048, 1024, 0, (0, 16)), (2048, None, 0, (0, 0)), (100, 1024, 0, (0, 0)),
     (2048, 1024, 64, (1, 16)), (0, 1024, 64, (0, 0))],
)  # fmt: skip
def test_stale_range(history, window, sinks, want):
    # (history + 1 - w) // tpb pages out of the window, after the sink pages; C++ division
    # truncates towards zero (100 + 1 - 1024 = -923: -14, below the start).
    assert ps.stale_range(ps.TrtllmLifeCycle(window, -(-sinks // 64)), history, 64) == want
