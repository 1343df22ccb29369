"""kvgen.runtime's page model on its own (docs/cost-model.md §2, §3), derived by hand."""

from __future__ import annotations

import pytest
from kvgen.runtime._pages import float32, integer, live_pages, mode_headroom, peak_live_pages


def test_full_attention_holds_every_page_up_to_capacity():
    # ceil(33 / 16) = 3 pages, whatever the history.
    assert live_pages(0, 33, None, 0, 16) == 3
    assert live_pages(30, 33, None, 0, 16) == 3


def test_swa_releases_pages_wholly_behind_the_window():
    # history 70, window 32: tokens [39, 70] are needed; pages [0, (71-32)//16) = [0, 2) stale.
    # capacity 70 covers ceil(70/16) = 5 pages, so 5 - 2 = 3 pages are live.
    assert live_pages(70, 70, 32, 0, 16) == 3


def test_sink_pages_never_go_stale():
    # Same request with 16 sink tokens: page 0 is a sink, only page 1 is stale: 5 - 1 = 4.
    assert live_pages(70, 70, 32, 16, 16) == 4


def test_peak_of_a_window_plus_one_token_spans_three_pages():
    # 32 window tokens + 1 new token = 33 consecutive tokens cover at most 3 pages of 16.
    assert peak_live_pages(32, 1, 0, 16) == 3
    # With 5 tokens of headroom the 37 tokens still fit in 3 pages when aligned at 0, but
    # starting at offset 12 they reach a 4th: [12, 48] spans pages 0..3.
    assert peak_live_pages(32, 5, 0, 16) == 4


def test_peak_is_the_maximum_over_every_history():
    for window in (17, 32, 45):
        for head in (1, 4, 9):
            scanned = max(live_pages(h, h + head, window, 0, 8) for h in range(200))
            assert peak_live_pages(window, head, 0, 8) == scanned


@pytest.mark.parametrize(
    ("mode", "k", "tree", "expected"),
    [
        ("none", 0, None, (0, 0, 0)),
        ("ngram", 3, None, (0, 3, 0)),  # two-model: the target verifies K tokens, no E
        ("pard", 2, None, (1, 3, 0)),  # K drafts padded to 2K-1 slots, E = K-1
        ("pard", 4, None, (3, 7, 0)),
        ("mtp", 4, None, (3, 4, 4)),  # block reuse backoff D = K for MTP
        ("eagle3", 3, None, (2, 3, 1)),
        ("eagle3", 3, 10, (2, 10, 1)),  # tree: T draft slots
        ("dflash", 2, None, (1, 2, 0)),
    ],
)
def test_mode_headroom(mode, k, tree, expected):
    assert tuple(mode_headroom(mode, k, tree)) == expected


def test_float32_rounds_the_watermark_as_the_runtime_compares_it():
    assert float32(0.95) != 0.95
    assert abs(float32(0.95) - 0.95) < 1e-7
    assert float32(0.5) == 0.5


def test_integer_accepts_index_types_but_not_bools_or_floats():
    numpy = pytest.importorskip("numpy")
    assert integer(numpy.int64(7)) == 7
    assert integer(7) == 7
    assert integer(True) is None
    assert integer(1.5) is None
    assert integer("3") is None
