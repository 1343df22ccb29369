"""The speculative headroom table (``kvgen.sizing.facts.HEADROOM``) against TensorRT-LLM's own
functions.

``tests/fixtures/engines/trtllm_static.json`` holds, per mode and K = max_draft_len, what the
engine's ``get_num_extra_kv_tokens`` (E), the speculative config's ``tokens_per_gen_step`` (the
tokens one generation step adds, 1 + draft slots) and ``_get_generation_kv_capacity`` (the
total headroom H = E + tokens_per_gen_step, plus a dynamic tree's draft reserve) returned at
revision 38198e34 (``bench/engines/trtllm_oracle.py``). HEADROOM writes each of E, slots and
the reuse backoff D as a*K + b; the first two are pinned here, so editing a coefficient of
either fails this test (the backoff comes from ``draft_prompt_lookahead``, which the stored
source at that revision did not reach, and keeps its hand-derived tests in test_facts.py).

The runtime comparison (``tests/trtllm_cases.py``) feeds the shim's extra tokens, draft slots
and step width to the engine's workloads; the last test pins those to the same golden, so the
runtime goldens no longer take the headroom from the shim alone.
"""

import json
from pathlib import Path

import pytest
from kvgen.runtime import allocator as rt
from kvgen.sizing import facts

GOLDEN = Path(__file__).resolve().parents[2] / "tests/fixtures/engines/trtllm_static.json"
ROWS = json.loads(GOLDEN.read_text())["headroom"]
LINEAR = [r for r in ROWS if not r["dynamic_top_k"]]


def kvgen_headroom(mode: str, k: int, tree: int | None) -> dict[str, int]:
    """kvgen's reading of one mode: E, the step width 1 + slots and H = E + 1 + slots."""
    extra, slots, _backoff = facts.mode_headroom(mode, k, tree)
    return {"extra": extra, "step": 1 + slots, "headroom": extra + 1 + slots}


def engine_headroom(row: dict) -> dict[str, int]:
    return {"extra": row["extra_kv_tokens"], "step": row["tokens_per_gen_step"],
            "headroom": row["target"]["headroom"]}  # fmt: skip


def test_the_golden_covers_every_kvgen_mode_at_k_1_to_6_pard_and_dflash_included():
    seen = {(r["mode"], r["max_draft_len"]) for r in LINEAR}
    for mode in facts.HEADROOM:
        ks = (0,) if mode == "none" else (1, 2, 3, 4, 5, 6)
        assert {(mode, k) for k in ks} <= seen, mode


@pytest.mark.parametrize(
    "row",
    LINEAR,
    ids=[f"{r['mode']}-k{r['max_draft_len']}-t{r['tree_draft_tokens']}" for r in LINEAR],
)
def test_headroom_table_equals_the_engine(row):
    got = kvgen_headroom(row["mode"], row["max_draft_len"], row["tree_draft_tokens"])
    assert got == engine_headroom(row)


def test_pard_and_dflash_by_hand():
    # PARD K = 4 (PARDDecodingConfig.tokens_per_gen_step = 2K: K + 1 accepted + K - 1 masks;
    # a one-engine mode's extra tokens K - 1): E 3, step 8, H 11 = (K - 1) + 2K.
    pard = next(r for r in LINEAR if r["mode"] == "pard" and r["max_draft_len"] == 4)
    assert engine_headroom(pard) == {"extra": 3, "step": 8, "headroom": 11}
    # DFlash K = 4: tokens_per_gen_step K + 1 = 5, E 3, H 8.
    dflash = next(r for r in LINEAR if r["mode"] == "dflash" and r["max_draft_len"] == 4)
    assert engine_headroom(dflash) == {"extra": 3, "step": 5, "headroom": 8}
    # A two-model mode (ngram): the target runs no draft layers, E 0, step K + 1.
    ngram = next(r for r in LINEAR if r["mode"] == "ngram" and r["max_draft_len"] == 4)
    assert engine_headroom(ngram) == {"extra": 0, "step": 5, "headroom": 5}


def test_a_dynamic_tree_draft_reserves_top_k_times_k():
    # EAGLE3, K 4, dynamic tree top-K 2: max_total_draft_tokens defaults to 2 x 4 = 8, the
    # target's headroom E + 1 + 8 = 3 + 9 = 12; the draft pool reserves max(8, 2 x 4) = 8.
    row = next(r for r in ROWS if r["mode"] == "eagle3" and r["dynamic_top_k"] == 2)
    assert row["target"] == {"reserve": 8, "headroom": 12}
    assert row["draft"] == {"reserve": 8, "headroom": 12}
    # kvgen's EAGLE3 tree of 8 draft tokens gives the same target headroom.
    assert kvgen_headroom("eagle3", 4, 8)["headroom"] == 12


def test_an_edited_coefficient_is_caught(monkeypatch):
    # PARD's slots written K instead of 2K - 1 (the seed's drift 3): the comparison above must
    # then disagree with the engine for every K > 1 (at K = 1, K and 2K - 1 are both 1).
    table = dict(facts.HEADROOM)
    table["pard"] = ((1, -1), (1, 0), (0, 0))
    monkeypatch.setattr(facts, "HEADROOM", table)
    pard = [r for r in LINEAR if r["mode"] == "pard" and r["max_draft_len"] > 1]
    assert pard and all(
        kvgen_headroom("pard", r["max_draft_len"], None) != engine_headroom(r) for r in pard
    )


def test_the_runtime_comparison_feeds_the_engine_s_headroom():
    # Every speculative profile the runtime goldens drive (tests/trtllm_cases.py) gives the
    # engine the shim's E, draft slots and step width: each must be the engine's own.
    from tests.trtllm_cases import CASES

    checked = 0
    for case in CASES:
        if case.speculative == "none":
            continue
        tables = case.tables()
        mode, k, tree = tables.profiles[case.speculative]
        shim = rt.KVCacheShim(
            tables, case.model, speculative=case.speculative, max_batch_size=case.batch,
            max_num_tokens=case.max_num_tokens, max_seq_len=case.max_seq_len, device="meta",
            max_tokens=0,
        )  # fmt: skip
        row = next(r for r in LINEAR if (r["mode"], r["max_draft_len"], r["tree_draft_tokens"])
                   == (mode, k, tree))  # fmt: skip
        assert (shim.extra_tokens, shim.step_tokens, shim.headroom) == (
            row["extra_kv_tokens"], row["tokens_per_gen_step"], row["target"]["headroom"]
        ), case.name  # fmt: skip
        checked += 1
    assert checked >= 5
