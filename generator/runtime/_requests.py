"""Admission, release, suspend and resume of requests (§3, §7)."""

from __future__ import annotations

from kvgen.runtime._errors import (
    DuplicateRequestError,
    InvalidRequestIdError,
    InvalidStepError,
    ResumeRefusedError,
)
from kvgen.runtime._pages import ceil_div, stale_end
from kvgen.runtime._pools import Pool
from kvgen.runtime._state import CONTEXT, NO_PAGE, Request, RequestId, ShimState

__all__ = ["RequestLifecycle"]


class RequestLifecycle(ShimState):
    """Requests enter, leave, and step aside under memory pressure."""

    def add_request(self, rid: RequestId) -> None:
        """Admit a request (history 0): it takes a slot in every recurrent-state pool and its
        encoder tokens' pages in every cross-attention pool (held until it leaves, §4).

        Request ids are any hashable value but None (ints, strings, numpy ints, tuples)."""
        if rid is None:
            raise InvalidRequestIdError("request id None is not an id")
        try:
            present = rid in self._requests
        except TypeError:
            raise InvalidRequestIdError(f"request ids must be hashable, got {rid!r}") from None
        if present:
            raise DuplicateRequestError(f"request {rid!r} is already present")
        if self._live >= self.max_batch_size:
            raise InvalidStepError(f"batch is full: {self.max_batch_size} live requests")
        for pool in self._states:
            self._check_free(pool, 1)
        for pool, pages in self._cross:
            self._check_free(pool, pages)
        r = Request(len(self._paged), len(self._states), self._initial_stale, len(self._cross))
        for j, pool in enumerate(self._states):
            r.slots[j] = pool.take(1)[0]
        for j, (pool, pages) in enumerate(self._cross):
            r.cross[j] = pool.take(pages)
        self._requests[rid] = r
        self._freed.discard(rid)
        self._live += 1
        self._note_peak()

    def free(self, rid: RequestId) -> None:
        """Release every page and slot of a request (in any phase)."""
        r = self._get(rid)
        self._release(r)
        if not r.suspended:
            self._live -= 1
            self._capacity_tokens -= r.capacity
        if r.phase == CONTEXT:
            self._context_tokens -= r.chunk
        del self._requests[rid]
        self._freed.add(rid)

    def suspend(self, rid: RequestId) -> None:
        """Release a request's pages between forwards; it keeps its history and capacity."""
        r = self._idle(rid)
        self._release(r)
        r.suspended = True
        self._live -= 1
        self._capacity_tokens -= r.capacity

    def resume(self, rid: RequestId) -> None:
        """Bring a suspended request back: only if every pool it needs stays at or below
        max_util_for_resume (compared as a float32) afterwards (docs/cost-model.md §7)."""
        r = self._get(rid)
        if not r.suspended:
            raise InvalidStepError(f"request {rid!r} is not suspended")
        if self._live >= self.max_batch_size:
            raise InvalidStepError(f"batch is full: {self.max_batch_size} live requests")
        tpb = self.tokens_per_block
        held = ceil_div(r.capacity, self.page_span)
        needs: list[tuple[Pool, int]] = []
        for pool, window, sink_blocks, _s, chunk in self._paged:
            stale = 0
            if window is not None:
                stale = stale_end(r.history, window, sink_blocks, tpb, chunk) - sink_blocks
            needs.append((pool, held - stale))
        needs += [(pool, 1) for pool in self._states]
        needs += self._cross
        for pool, need in needs:
            self._check_free(pool, need)
        for pool, need in needs:
            utilisation = (pool.used + need) / pool.pages if need else 0.0
            if utilisation > self._util32:
                raise ResumeRefusedError(pool.manager, pool.name, utilisation, self._util32)
        for i, (pool, window, sink_blocks, _s, chunk) in enumerate(self._paged):
            end = (
                sink_blocks
                if window is None
                else stale_end(r.history, window, sink_blocks, tpb, chunk)
            )
            r.tables[i] = [
                NO_PAGE if sink_blocks <= x < end else pool.take(1)[0] for x in range(held)
            ]
            r.stale[i] = end
        for j, pool in enumerate(self._states):
            r.slots[j] = pool.take(1)[0]
        for j, (pool, pages) in enumerate(self._cross):
            r.cross[j] = pool.take(pages)
        r.held = held
        r.suspended = False
        self._live += 1
        self._capacity_tokens += r.capacity
        self._note_peak()
