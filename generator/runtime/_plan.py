"""How many pages each pool gets for T tokens, and the largest T a quota holds.

The shim's own derivation from its page model (§3, §6, §7), never the static cost model's:
each life cycle (``kvgen.runtime._kinds``) answers for its pools.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from kvgen.runtime._errors import QuotaTooSmallError
from kvgen.runtime._kinds import SCRATCH
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
        """Pages of every pool of ``manager`` for T = ``tokens``: each life cycle's answer."""
        scratch = self.scratch_reuse and manager.name == "target"
        # A draft whose pages are one windowed pool is rounded up for the resume watermark.
        rounded = (
            manager.name == "draft" and len(manager.cycles) == 1 and manager.cycles[0].life.windowed
        )
        context = self.max_num_tokens if rounded else min(tokens, self.max_num_tokens)
        pages = {}
        for cycle in manager.cycles:
            pages.update(cycle.life.pages(self, cycle, tokens, context, scratch))
            if rounded:
                pages[cycle.name] = math.ceil(pages[cycle.name] / self.util32)
        return pages

    def bytes(self, manager: CacheManager, tokens: int) -> int:
        """Bytes of the pools of ``manager`` for T = ``tokens``."""
        tpb = self.tokens_per_block
        by_name = {cycle.name: cycle for cycle in manager.cycles}
        total = 0
        for name, pages in self.pages(manager, tokens).items():
            if name.endswith(SCRATCH):
                cycle = by_name[name.removesuffix(SCRATCH)]
                total += pages * tpb * sum(lay.bytes_per_token for lay in cycle.scratch_layers)
            else:
                total += by_name[name].life.pool_bytes(by_name[name], pages, tpb)
        return total

    def largest_tokens(self, manager: CacheManager, budget: int) -> int | None:
        """The largest T whose pools fit ``budget`` bytes; None when the pools stop growing."""
        smallest = self.bytes(manager, 0)
        if smallest > budget:
            raise QuotaTooSmallError(
                f"{manager.name}: quota_bytes {budget} cannot hold the pools of zero tokens "
                f"({smallest} bytes)"
            )
        grows = any(c.life.grows for c in manager.cycles)
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
