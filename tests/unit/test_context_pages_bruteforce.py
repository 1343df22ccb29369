"""The context pages ``quota_for_requests`` reserves on an SWA life cycle (docs/cost-model.md
§3, §4) are exactly the most an iteration can hold, by brute force over the runtime page model.

An iteration has R requests and N context tokens. A request generating holds at most
pages(w, H); a request in context with a chunk of n tokens holds at most the peak of
``live_pages(p, p + n + E)`` over its positions p. The most pages beyond R * pages(w, H) is
found here by dynamic programming over every split of N among k <= R chunks, each at its own
worst position, and compared with the closed form in the generic cost model
(``kvgen.costmodel._context_pages``) and in the generated modules' core
(``kvgen.sizing.sizing_quota.swa_context_tokens``, which turns it into the least T).
"""

from __future__ import annotations

from functools import cache

import pytest
from kvgen.runtime._pages import live_pages
from kvgen.sizing import sizing_quota

from tests.reference.costmodel import Headroom, _context_pages

# (E, H): no speculation, ngram K=4 (E 0, H 5), one-model K=2 (E 1, H 4), PARD K=3 (E 2, H 8)
HEADROOMS = ((0, 1), (0, 5), (1, 4), (2, 8))


def brute_force_context_pages(window: int, extra: int, head: int, tpb: int, r: int, n: int) -> int:
    """max over k <= R chunks summing to <= N of sum(peak pages of each chunk - pages(w, H))."""
    span = range(window + head + n + 3 * tpb)  # every alignment past the window's stale start
    generating = max(live_pages(p, p + head, window, 0, tpb) for p in span)

    @cache
    def chunk_gain(length: int) -> int:
        held = max(live_pages(p, p + length + extra, window, 0, tpb) for p in span)
        return max(0, held - generating)

    @cache
    def best(requests: int, tokens: int) -> int:
        if requests == 0 or tokens == 0:
            return 0
        return max(chunk_gain(m) + best(requests - 1, tokens - m) for m in range(tokens + 1))

    return best(r, n)


@pytest.mark.parametrize("tpb", (4, 8, 16))
@pytest.mark.parametrize(("extra", "head"), HEADROOMS)
def test_closed_form_is_the_brute_force_maximum(tpb, extra, head):
    headroom = Headroom(extra, head - extra, 0, 0)
    for window in range(2, 2 * tpb + 3):
        for requests in (1, 2, 3, 5):
            for chunk in sorted({1, 2, tpb - 1, tpb, tpb + 1, 2 * tpb + 3, 3 * tpb + 1}):
                want = brute_force_context_pages(window, extra, head, tpb, requests, chunk)
                got = _context_pages(window, headroom, tpb, requests, chunk)
                assert got == want, (window, requests, chunk)


@pytest.mark.parametrize(("extra", "head"), HEADROOMS)
def test_generated_core_plans_the_least_tokens_that_hold_them(extra, head):
    # The core's least T: ceil((T + rounding) / tpb) context pages cover the brute-force most,
    # T - 1 gives one page fewer (or T is 0), and T never passes N.
    tpb = 8
    for window in range(2, 3 * tpb + 3):
        for requests in (1, 3):
            for chunk in (1, tpb, 2 * tpb + 3):
                # The runtime's rounding (§4): tpb - 1 tokens per chunk slot where pages(w, H)
                # has no spare page over pages(w, E).
                spare = -(-(window + head - 2) // tpb) > -(-(window + extra - 2) // tpb)
                rounding = 0 if spare else min(requests, chunk) * (tpb - 1)
                want = brute_force_context_pages(window, extra, head, tpb, requests, chunk)
                tokens = sizing_quota.swa_context_tokens(
                    window - 2, extra, head, requests, chunk, rounding, tpb
                )  # offset w - 2: pages(w, x) - 1 = ceil((w - 2 + x)/tpb)
                assert 0 <= tokens <= chunk  # reached within min(T, N)
                assert -(-(tokens + rounding) // tpb) >= want
                if tokens:
                    assert -(-(tokens - 1 + rounding) // tpb) == want - 1
