"""pages(C, H) = ceil((C + H - 1 + tpb - gcd(C, tpb)) / tpb) is exactly the peak of the runtime
page model of chunked local attention (docs/cost-model.md §3), proven by brute force over every
history; and the two formulas a reader would reach for first are wrong where the test says.

The page model (vLLM ``ChunkedLocalAttentionManager``): with history h the next token attends
from its chunk start floor(h/C)*C, so pages [0, floor(floor(h/C)*C / tpb)) are stale; the request
holds pages up to ceil((h + H)/tpb) at the allocation peak.
"""

from __future__ import annotations

import math

import pytest

from tests.reference import layers as shapes

TPBS = (16, 32, 64)
HEADS = (0, 1, 2, 5, 8, 11, 20, 36)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def held_pages(history: int, head: int, chunk: int, tpb: int) -> int:
    """Written here from the page rule, apart from the shim and the cost model."""
    stale = history // chunk * chunk // tpb
    return ceil_div(history + head, tpb) - stale


def brute_force_peak(chunk: int, head: int, tpb: int) -> int:
    """The held page count at every history over tpb whole chunks (qC mod tpb repeats with
    period tpb/gcd(C, tpb) <= tpb chunks, so this visits every alignment)."""
    return max(held_pages(h, head, chunk, tpb) for h in range((tpb + 1) * chunk))


@pytest.mark.parametrize("tpb", TPBS)
def test_formula_is_the_brute_force_peak(tpb):
    # The shim's own scan (kvgen.runtime._pages) and the cost model's closed form.
    from kvgen.runtime._pages import chunk_live_pages, peak_chunk_pages

    for head in HEADS:
        for chunk in range(1, 200):
            peak = brute_force_peak(chunk, head, tpb)
            closed = ceil_div(chunk + head - 1 + tpb - math.gcd(chunk, tpb), tpb)
            assert peak == closed, (chunk, head, tpb)
            assert shapes.pages_per_chunk(chunk, head, tpb) == peak
            assert peak_chunk_pages(chunk, head, tpb) == peak
            h = 3 * chunk + chunk - 1
            assert chunk_live_pages(h, h + head, chunk, tpb) == held_pages(h, head, chunk, tpb)


@pytest.mark.parametrize("tpb", TPBS)
def test_page_aligned_chunks_peak_at_chunk_plus_headroom(tpb):
    """tpb | C: g = tpb, pages = ceil((C + H - 1)/tpb), e.g. C = 8192, H = 1 at tpb 32:
    8192/32 = 256 pages exactly (Llama 4, no speculation)."""
    for chunk in (tpb, 2 * tpb, 8192):
        for head in HEADS:
            assert brute_force_peak(chunk, head, tpb) == ceil_div(chunk + head - 1, tpb)
    assert shapes.pages_per_chunk(8192, 1, 32) == 256


@pytest.mark.parametrize("tpb", TPBS)
def test_ceil_chunk_over_block_is_short_under_speculation_or_misalignment(tpb):
    """Drift: ceil(C/tpb) misses pages. With H = 1 the peak is 1 + ceil((C - g)/tpb), which
    equals ceil(C/tpb) only when C mod tpb is 0 or g; with H >= 2 it is always short (the
    draft tokens spill past the chunk's last page)."""
    for head in HEADS[1:]:
        for chunk in range(1, 200):
            peak = brute_force_peak(chunk, head, tpb)
            naive = ceil_div(chunk, tpb)
            if head == 1 and chunk % tpb in (0, math.gcd(chunk, tpb)):
                assert naive == peak, (chunk, head, tpb)
            else:
                assert naive < peak, (chunk, head, tpb)


@pytest.mark.parametrize("tpb", TPBS)
def test_sliding_formula_on_a_chunk_is_a_page_over_when_aligned(tpb):
    """Drift: sizing a chunk as a window of C tokens, ceil((C + H - 2)/tpb) + 1, keeps the
    SWA boundary page that chunked attention never needs when tpb | C."""
    for head in HEADS[1:]:
        for chunk in range(tpb, 8 * tpb + 1, tpb):
            peak = brute_force_peak(chunk, head, tpb)
            sliding = shapes.pages_per_window(chunk, head, tpb)
            expected = peak + 1 if (chunk + head - 2) % tpb else peak
            assert sliding == expected, (chunk, head, tpb)


@pytest.mark.parametrize("tpb", TPBS)
def test_a_driven_request_peaks_at_the_formula(rendered_families, tpb):
    """Drive one request through the shim (no speculation, H = 1) across several chunks: the
    chunked pools peak at pages(C, 1) (c128: 128/tpb; the unaligned c100 at tpb 32:
    ceil((100 + 1 - 1 + 32 - 4)/32) = 4)."""
    allocator = rendered_families(f"fx_chunked_t{tpb}").allocator
    shim = allocator.KVCacheShim(
        "odd", max_batch_size=1, max_num_tokens=64, max_seq_len=900, max_tokens=1000, device="meta"
    )
    shim.add_request(0)
    shim.context_chunk(0, 1)
    peak = 0
    while shim.request_state(0)[0] < 899:
        shim.begin_generation([0])
        peak = max(peak, shim.pool("c100").used)
        shim.end_generation([0], 0)
    # Histories up to 899 cover chunks q <= 8, whose start offsets 100q mod tpb reach
    # tpb - 4 (q = 3, 7, 7 for tpb 16, 32, 64): the worst alignment is visited.
    assert peak == max(held_pages(h, 1, 100, tpb) for h in range(1, 899))
    assert peak == ceil_div(100 + 1 - 1 + tpb - 4, tpb)
