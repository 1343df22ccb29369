"""How many pages each pool gets for T tokens, and the largest T a quota holds.

The shim's own derivation from its page model (§3, §6, §7), never the static cost model's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from kvgen.runtime._errors import QuotaTooSmallError
from kvgen.runtime._layers import Cycle
from kvgen.runtime._pages import ceil_div, peak_chunk_pages, peak_live_pages
from kvgen.runtime._pools import CacheManager

__all__ = ["PagePlanner"]


class PagePlanner(NamedTuple):
    """The runtime parameters that decide pool sizes."""

    tokens_per_block: int
    max_batch_size: int
    max_num_tokens: int
    exact: bool  # semantics "exact": whole pages per request, chunk rounding
    scratch_reuse: bool
    headroom: int  # H: capacity - history at a step's peak
    extra_tokens: int  # E: capacity - history between forwards
    util32: float  # max_util_for_resume as a float32
    dcp_size: int = 1  # decode context parallelism: a full page spans tpb * dcp_size tokens

    def pages(self, manager: CacheManager, tokens: int) -> dict[str, int]:
        """Pages of every pool of ``manager`` for T = ``tokens``."""
        tpb, batch, chunk = self.tokens_per_block, self.max_batch_size, self.max_num_tokens
        scratch = self.scratch_reuse and manager.name == "target"
        # A draft whose pages are one SWA pool is rounded up for the resume watermark.
        rounded = manager.name == "draft" and [c.kind for c in manager.cycles] == ["swa"]
        context = chunk if rounded else min(tokens, chunk)
        pages = {}
        for cycle in manager.cycles:
            if cycle.kind == "state":
                pages[cycle.name] = batch  # one slot per request
            elif cycle.kind == "cross":
                # Every request's encoder tokens in whole pages, never more, never fewer (§4).
                pages[cycle.name] = batch * ceil_div(cycle.encoder_tokens, tpb)
            elif cycle.kind == "full":
                # Whole pages per request: under "exact" room for span-1 more tokens each.
                span = tpb * self.dcp_size  # one page of tpb tokens on each DCP rank (§9)
                padding = batch * (span - 1) if self.exact else 0
                pages[cycle.name] = ceil_div(tokens + padding, span)
            else:
                # No scratch pages for chunked attention: a chunk boundary makes a whole
                # chunk of pages stale at once, more than one context chunk's worth.
                self._swa_pages(pages, cycle, context, scratch and not cycle.chunk)
                if rounded:
                    pages[cycle.name] = math.ceil(pages[cycle.name] / self.util32)
        return pages

    def _swa_pages(self, pages: dict[str, int], cycle: Cycle, context: int, scratch: bool) -> None:
        assert cycle.window is not None
        tpb, batch = self.tokens_per_block, self.max_batch_size
        peak = self._peak(cycle, self.headroom)
        rounding = 0
        if self.exact:
            before = self._peak(cycle, self.extra_tokens)
            if peak == before:  # no spare page: a chunk may round up one page more
                rounding = min(batch, self.max_num_tokens) * (tpb - 1)
        context_pages = ceil_div(context + rounding, tpb)
        if scratch:
            pages[cycle.name] = batch * peak
            pages[cycle.name + "/scratch"] = context_pages
        else:
            pages[cycle.name] = batch * peak + context_pages

    def _peak(self, cycle: Cycle, head: int) -> int:
        """Peak pages of one request on an SWA or chunked life cycle, ``head`` tokens ahead."""
        assert cycle.window is not None
        if cycle.chunk:
            return peak_chunk_pages(cycle.chunk, head, self.tokens_per_block)
        return peak_live_pages(cycle.window, head, cycle.sink_tokens, self.tokens_per_block)

    def bytes(self, manager: CacheManager, tokens: int) -> int:
        """Bytes of the pools of ``manager`` for T = ``tokens``."""
        tpb = self.tokens_per_block
        by_name = {cycle.name: cycle for cycle in manager.cycles}
        total = 0
        for name, pages in self.pages(manager, tokens).items():
            cycle = by_name[name.split("/")[0]]
            if cycle.kind == "state":
                total += pages * cycle.state_bytes
            elif name.endswith("/scratch"):
                total += pages * tpb * sum(lay.bytes_per_token for lay in cycle.scratch_layers)
            else:
                total += pages * tpb * cycle.token_bytes
        return total

    def largest_tokens(self, manager: CacheManager, budget: int) -> int | None:
        """The largest T whose pools fit ``budget`` bytes; None when the pools stop growing."""
        smallest = self.bytes(manager, 0)
        if smallest > budget:
            raise QuotaTooSmallError(
                f"{manager.name}: quota_bytes {budget} cannot hold the pools of zero tokens "
                f"({smallest} bytes)"
            )
        grows = any(c.kind == "full" for c in manager.cycles)
        if not grows and self.bytes(manager, self.max_num_tokens) <= budget:
            return None
        low, high = 0, max(self.max_num_tokens, 1)
        while grows and self.bytes(manager, high) <= budget:
            low, high = high, high * 2
        while high - low > 1:  # plan bytes never shrink as T grows
            mid = (low + high) // 2
            if self.bytes(manager, mid) <= budget:
                low = mid
            else:
                high = mid
        return low
