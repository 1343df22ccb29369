"""pages(w, H) = ceil((w + H - 2) / tpb) + 1 is exactly the peak of the runtime page model
(docs/cost-model.md §3), and the two nearby formulas are off by one page where that section
says."""

from __future__ import annotations

import pytest

TPBS = (16, 32, 64)
HEADS = (1, 2, 5, 8, 11, 20)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def brute_force_peak(allocator, window: int, head: int, tpb: int) -> int:
    """The live page count at every history, capacity ``head`` tokens ahead of it."""
    return max(
        allocator.live_pages(h, h + head, window, 0, tpb) for h in range(window + head + 3 * tpb)
    )


@pytest.fixture(scope="module")
def allocator(rendered_families):
    return rendered_families("fx_mixed_t32").allocator


@pytest.mark.parametrize("tpb", TPBS)
def test_formula_is_the_simulated_peak(allocator, tpb):
    for head in HEADS:
        for window in range(1, 300):
            peak = brute_force_peak(allocator, window, head, tpb)
            assert peak == ceil_div(window + head - 2, tpb) + 1, (window, head, tpb)
            assert allocator.peak_live_pages(window, head, 0, tpb) == peak


@pytest.mark.parametrize("tpb", TPBS)
def test_ceil_window_over_block_is_a_boundary_page_short(allocator, tpb):
    for head in HEADS:
        for window in range(1, 300):
            peak = brute_force_peak(allocator, window, head, tpb)
            naive = ceil_div(window, tpb)
            if head == 1 and (window - 1) % tpb == 0:
                assert naive == peak  # the only alignment where the boundary page fits
            else:
                assert naive < peak, (window, head, tpb)


@pytest.mark.parametrize("tpb", TPBS)
def test_ceil_window_plus_head_minus_one_is_a_page_over_on_multiples(allocator, tpb):
    for head in HEADS:
        for window in range(1, 300):
            peak = brute_force_peak(allocator, window, head, tpb)
            over = ceil_div(window + head - 1, tpb) + 1
            expected = peak + 1 if (window + head - 2) % tpb == 0 else peak
            assert over == expected, (window, head, tpb)


def test_sinks_add_their_blocks(allocator):
    for tpb in TPBS:
        for sinks in (1, tpb, tpb + 1, 3 * tpb):
            for window in (1, 50, 129):
                peak = max(
                    allocator.live_pages(h, h + 5, window, sinks, tpb)
                    for h in range(window + sinks + 4 * tpb)
                )
                formula = ceil_div(window + 3, tpb) + 1 + ceil_div(sinks, tpb)
                assert peak == formula == allocator.peak_live_pages(window, 5, sinks, tpb)


@pytest.mark.parametrize("tpb", TPBS)
def test_a_driven_request_peaks_at_the_formula(rendered_families, tpb):
    """Drive one request through the shim (no speculation, H = 1) across every alignment."""
    allocator = rendered_families(f"fx_mixed_t{tpb}").allocator
    shim = allocator.KVCacheShim(
        "three",
        max_batch_size=1,
        max_num_tokens=64,
        max_seq_len=600,
        max_tokens=700,
        device="meta",
        pool_groups="life_cycle",  # one pool per window: w100 and w257 have equal slot sizes
    )
    shim.add_request(0)
    shim.context_chunk(0, 1)
    peaks = {"w100": 0, "w257": 0}
    while shim.request_state(0)[0] < 257 + 3 * tpb:
        shim.begin_generation([0])
        for name in peaks:
            peaks[name] = max(peaks[name], shim.pool(name).used)
        shim.end_generation([0], 0)
    assert peaks == {
        "w100": ceil_div(100 + 1 - 2, tpb) + 1,
        "w257": ceil_div(257 + 1 - 2, tpb) + 1,
    }
