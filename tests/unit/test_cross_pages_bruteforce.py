"""cross_pages(e) = ceil(e / tpb): the pages one request holds on a cross-attention life cycle
(docs/cost-model.md §4), proven by driving the runtime page model through every history up
to a few pages past the encoder, under every headroom H the speculative modes give, context
chunks of every size up to two pages, and every acceptance count. The two nearby formulas a
sizing could use are off where this module says.
"""

from __future__ import annotations

import pytest
from kvgen.runtime import allocator as rt

from tests.reference.layers import cross_pages

TPBS = (16, 32, 64)
# (mode, K): H = 1 (none), 5 (ngram, K = 4), 8 (one-model EAGLE3, K = 4), 11 (PARD, K = 4).
MODES = (("none", 0), ("ngram", 4), ("eagle3", 4), ("pard", 4))


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _shim(tpb: int, encoder_tokens: int, mode: str, k: int, chunk: int) -> rt.KVCacheShim:
    cross = rt.LayerKind(
        "cross", kv_heads=1, head_dim=8, dtype="bf16", encoder_tokens=encoder_tokens
    )
    full = rt.LayerKind("full", kv_heads=1, head_dim=8, dtype="bf16")
    stack = rt.LayerStack(2, ("g", "x"), {"g": full, "x": cross})
    profiles = {} if mode == "none" else {"p": rt.SpeculativeProfile(mode, k)}
    model = rt.ModelTable(1 << 14, stack, ("none", *profiles))
    tables = rt.FamilyTables("cross_proof", tpb, {"m": model}, profiles)
    return rt.KVCacheShim(
        tables,
        "m",
        speculative="none" if mode == "none" else "p",
        max_batch_size=1,
        max_num_tokens=chunk,
        max_seq_len=encoder_tokens + 4 * tpb + 3 * k + 2,
        max_tokens=1 << 13,
        device="meta",
    )


def brute_force_cross_pages(tpb: int, encoder_tokens: int, mode: str, k: int) -> set[int]:
    """Every page count the cross pool holds for one request, from admission to its end,
    over chunk sizes 1..2*tpb and acceptances 0..draft slots (cycled)."""
    seen = set()
    for chunk in range(1, 2 * tpb + 1, 3):
        shim = _shim(tpb, encoder_tokens, mode, k, chunk)
        pool = shim.managers["target"].pools["cross"]
        shim.add_request("r")
        seen.add(pool.used)
        while shim.request_state("r")[0] < 2 * tpb:
            shim.context_chunk("r", chunk)
            seen.add(pool.used)
        step = 0
        while shim.request_state("r")[0] + shim.draft_slots + 1 <= shim.max_seq_len:
            shim.begin_generation(["r"])
            seen.add(pool.used)
            shim.end_generation(["r"], step % (shim.draft_slots + 1))
            seen.add(pool.used)
            step += 1
        shim.free("r")
        assert pool.used == 0
    return seen


@pytest.mark.parametrize("tpb", TPBS)
def test_formula_is_the_page_count_at_every_step(tpb):
    for mode, k in MODES:
        for encoder_tokens in (1, 2, tpb - 1, tpb, tpb + 1, 2 * tpb + 5, 3 * tpb):
            seen = brute_force_cross_pages(tpb, encoder_tokens, mode, k)
            # Constant from admission to the end: no growth with history, none with H.
            assert seen == {cross_pages(encoder_tokens, tpb)}, (mode, encoder_tokens, tpb)
            assert cross_pages(encoder_tokens, tpb) == ceil_div(encoder_tokens, tpb)


@pytest.mark.parametrize("tpb", TPBS)
def test_floor_is_a_page_short_and_headroom_a_page_over(tpb):
    """Two plausible mistakes: floor(e/tpb) (tokens truncated to pages) is a page short
    unless tpb divides e; ceil((e + H - 1)/tpb) (a cross layer sized like a self-attention
    layer that runs H tokens ahead) is a page over wherever e mod tpb is 0 or past
    tpb - H + 1."""
    for encoder_tokens in range(1, 3 * tpb + 1):
        (peak,) = brute_force_cross_pages(tpb, encoder_tokens, "ngram", 4)  # H = 5
        short = encoder_tokens // tpb
        assert short == (peak if encoder_tokens % tpb == 0 else peak - 1)
        over = ceil_div(encoder_tokens + 5 - 1, tpb)
        rest = encoder_tokens % tpb
        assert over == (peak + 1 if rest == 0 or rest > tpb - 4 else peak), encoder_tokens
