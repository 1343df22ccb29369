"""Decode context parallelism, page formula proven per rank by brute force (docs/cost-model.md
§9): with DCP size d and interleave I, token t of a request lives on rank (t // I) % d. Every
rank holds ``ceil(c / (tpb * d))`` pages for capacity c (one block-table entry spans tpb * d
tokens), and that is exactly what the busiest rank needs: no rank overflows its pages and
rank 0 uses the last one, for every capacity, d, I and tpb below.

The brute force enumerates token ownership position by position; the closed forms it checks
are the shim's (``kvgen.runtime._dcp``) and the engines' local length (vLLM
``get_dcp_local_seq_lens``: base = c // I // d * I, plus min(max(c - base*d - r*I, 0), I)).
"""

from __future__ import annotations

import pytest
from kvgen.runtime._dcp import DecodeContextParallel

GROUPS = ((1, 1), (2, 1), (2, 2), (3, 1), (4, 1), (4, 4), (8, 1), (8, 2))  # (d, I)
TPBS = (4, 8, 16)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def owned(capacity: int, d: int, interleave: int, rank: int) -> list[int]:
    """Positions [0, capacity) that ``rank`` holds, by enumeration."""
    return [t for t in range(capacity) if (t // interleave) % d == rank]


def engine_local_len(capacity: int, d: int, interleave: int, rank: int) -> int:
    # The engines' closed form (vLLM get_dcp_local_seq_lens), written out here.
    base = capacity // interleave // d * interleave
    return base + min(max(capacity - base * d - rank * interleave, 0), interleave)


@pytest.mark.parametrize("tpb", TPBS)
@pytest.mark.parametrize(("d", "interleave"), GROUPS)
def test_every_rank_fits_its_tokens_in_the_shared_page_count(tpb, d, interleave):
    if tpb % interleave:
        pytest.skip("the engines require tpb % I == 0")
    span = tpb * d
    for capacity in range(0, 4 * span + 3):
        pages = ceil_div(capacity, span)  # the page formula: the same on every rank
        busiest = 0
        for rank in range(d):
            group = DecodeContextParallel(d, rank, interleave)
            mine = owned(capacity, d, interleave, rank)
            assert len(mine) == group.local_tokens(capacity)
            assert len(mine) == engine_local_len(capacity, d, interleave, rank)
            slots = [group.slot(t, tpb) for t in mine]
            assert None not in slots
            assert len(set(slots)) == len(slots), (capacity, rank)  # no two tokens share a slot
            for block, offset in slots:  # type: ignore[misc]
                assert 0 <= block < pages and 0 <= offset < tpb, (capacity, rank, block, offset)
            busiest = max(busiest, ceil_div(len(mine), tpb))
        # Tight: the busiest rank (rank 0) needs every page the formula gives, no fewer.
        assert busiest == pages, (capacity, d, interleave, tpb)


@pytest.mark.parametrize(("d", "interleave"), GROUPS)
def test_each_position_lives_on_exactly_one_rank(d, interleave):
    tpb = 8
    for position in range(5 * tpb * d):
        holders = [
            rank
            for rank in range(d)
            if DecodeContextParallel(d, rank, interleave).slot(position, tpb) is not None
        ]
        assert holders == [(position // interleave) % d]


def test_rounding_tokens_per_rank_then_pages_is_the_same_formula():
    # ceil(ceil(c/d)/tpb) == ceil(c/(tpb*d)): rounding the busiest rank's tokens first is not a
    # drift; rounding pages first and splitting them (floor(ceil(c/tpb)/d)) drops a page.
    tpb, d = 16, 4
    dropped = 0
    for capacity in range(1, 10 * tpb * d):
        assert ceil_div(ceil_div(capacity, d), tpb) == ceil_div(capacity, tpb * d)
        dropped += ceil_div(capacity, tpb) // d < ceil_div(capacity, tpb * d)
    assert dropped  # e.g. c = 1: one page on every rank, not 1 // 4 = 0


@pytest.mark.parametrize(("d", "interleave"), GROUPS)
def test_b_requests_never_hold_more_pages_than_the_exact_pool(d, interleave):
    # The "exact" full pool plans ceil((T + B*(span-1)) / span) pages for T capacity tokens
    # over B requests (§4 with the span of §9); brute force over every split of small T.
    tpb, batch = 4, 3
    span = tpb * d
    for total in range(0, 3 * span + 2):
        planned = ceil_div(total + batch * (span - 1), span)
        for first in range(total + 1):
            for second in range(total - first + 1):
                third = total - first - second
                held = sum(ceil_div(c, span) for c in (first, second, third))
                assert held <= planned, (total, first, second)
