"""The runtime page model (docs/cost-model.md §2, §3): pages held per life cycle, headroom.

These are the shim's own derivations from the page rules of the runtime, written apart from
the static cost model (``kvgen.sizing.sizing_core``, which the generated sizing modules bind) on
purpose: the diff suite compares the two, which only means something while neither uses the
other.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

from kvgen.sizing import facts
from kvgen.sizing.facts import float32

__all__ = [
    "TWO_MODEL_MODES",
    "Headroom",
    "ceil_div",
    "chunk_live_pages",
    "float32",
    "integer",
    "live_pages",
    "mode_headroom",
    "peak_chunk_pages",
    "peak_live_pages",
    "stale_end",
]

# Modes whose drafter keeps its own engine: the target only verifies K draft tokens a step.
TWO_MODEL_MODES = facts.TWO_MODEL_MODES


def integer(value: object) -> int | None:
    """``value`` as an int when it is an integer (``operator.index``: numpy ints too) and not
    a bool; None otherwise."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]  # TypeError: no __index__
    except TypeError:
        return None


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def live_pages(
    history: int, capacity: int, window: int | None, sink_tokens: int, tokens_per_block: int
) -> int:
    """Pages one request holds on a life cycle: ``[0, ceil(c/tpb))`` minus the stale range
    ``[min(ceil(h/tpb), sink_blocks), max(start, floor((h+1-w)/tpb)))`` (§3)."""
    held = ceil_div(capacity, tokens_per_block)
    if window is None:
        return held
    sink_blocks = ceil_div(sink_tokens, tokens_per_block)
    start = min(ceil_div(history, tokens_per_block), sink_blocks)
    end = max(start, (history + 1 - window) // tokens_per_block)
    return held - (end - start)


def peak_live_pages(window: int, head: int, sink_tokens: int, tokens_per_block: int) -> int:
    """The most pages a request holds on an SWA life cycle with capacity ``head`` tokens ahead
    of its history, over every history, by scanning histories.

    Below ``h1 = sink_blocks*tpb + w - 1`` no page is stale yet, so the count only grows with
    the history; from ``h1`` on one page goes stale per ``tpb`` tokens, so the count repeats
    with period ``tpb``. Scanning ``[h1 - 1, h1 + tpb)`` therefore visits every alignment.
    """
    h1 = ceil_div(sink_tokens, tokens_per_block) * tokens_per_block + window - 1
    return max(
        live_pages(h, h + head, window, sink_tokens, tokens_per_block)
        for h in range(max(0, h1 - 1), h1 + tokens_per_block)
    )


def stale_end(
    history: int, window: int, sink_blocks: int, tokens_per_block: int, chunk: int = 0
) -> int:
    """Pages ``[sink_blocks, end)`` are stale; an empty range when ``end == sink_blocks``.
    Chunked attention (``chunk`` > 0): the next token attends from its chunk's start
    ``floor(h/C)*C`` (vLLM ``ChunkedLocalAttentionManager.get_num_skipped_tokens``), so the
    pages wholly before it are stale."""
    if chunk:
        return history // chunk * chunk // tokens_per_block
    return max(sink_blocks, (history + 1 - window) // tokens_per_block)


def chunk_live_pages(history: int, capacity: int, chunk: int, tokens_per_block: int) -> int:
    """Pages one request holds on a chunked life cycle: ``[0, ceil(c/tpb))`` minus the pages
    before its chunk's start, ``[0, floor(floor(h/C)*C/tpb))`` (§3)."""
    return ceil_div(capacity, tokens_per_block) - stale_end(history, 0, 0, tokens_per_block, chunk)


def peak_chunk_pages(chunk: int, head: int, tokens_per_block: int) -> int:
    """The most pages a request holds on a chunked life cycle with capacity ``head`` tokens
    ahead of its history, over every history, by scanning histories.

    Within one chunk (``h = qC + r``) the stale pages are fixed and the count grows with
    ``r``, so each chunk peaks at its last history ``qC + C - 1``; the stale offset
    ``qC mod tpb`` repeats after at most ``tpb`` chunks, so scanning ``q < tpb`` visits every
    alignment."""
    return max(
        chunk_live_pages(
            q * chunk + chunk - 1, q * chunk + chunk - 1 + head, chunk, tokens_per_block
        )
        for q in range(tokens_per_block)
    )


class Headroom(NamedTuple):
    """What a speculative mode adds to a request's capacity (§2, §5)."""

    extra_tokens: int  # E: capacity - history between forwards
    draft_slots: int  # a step adds 1 + draft slots and accepts 0..draft slots
    backoff: int  # D: block-reuse retention added to every window


def mode_headroom(mode: str, max_draft_len: int, tree_draft_tokens: int | None) -> Headroom:
    """(E, draft slots, D) of one speculative mode with K = ``max_draft_len`` (the mode table
    is a fact, ``kvgen.sizing.facts.HEADROOM``; the pages it implies are derived here)."""
    return Headroom(*facts.mode_headroom(mode, max_draft_len, tree_draft_tokens))
