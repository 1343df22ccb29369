"""Admission, release, suspend and resume of requests (§3, §7)."""

from __future__ import annotations

from kvgen.runtime._errors import (
    DuplicateRequestError,
    InvalidRequestIdError,
    InvalidStepError,
    OutOfPagesError,
    ResumeRefusedError,
)
from kvgen.runtime._state import CONTEXT, NO_PAGE, Request, RequestId, ShimState

__all__ = ["RequestLifecycle"]


class RequestLifecycle(ShimState):
    """Requests enter, leave, and step aside under memory pressure: one part of a shim over
    its state (``ShimState``)."""

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
        self._check_watermark()  # a new request starts suspended and is resumed (V2)
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
        if r.suspended:
            self._mark_suspended(r, -1)
            self._unpark(r)
            for (i, _block), row in r.hosted.items():
                self._paged[i].pool.host_recycled.append(row)
            r.hosted.clear()
        self._release(r)
        if not r.suspended:
            self._live -= 1
            self._capacity_tokens -= r.capacity
        if r.phase == CONTEXT:
            self._context_tokens -= r.chunk
        del self._requests[rid]
        self._freed.add(rid)

    def suspend(self, rid: RequestId) -> None:
        """Step a request aside between forwards. It keeps its pages (TensorRT-LLM V2: held,
        evictable only to a lower tier): they stay taken in every pool and count toward the
        resume watermark, and leave ``bytes_in_use`` for ``evictable_bytes``.

        With a host tier (``host_cache_bytes``) its pages are parked instead: evictable, so
        they no longer count toward the watermark, and moved to the host tier (oldest parked
        first) when a pool's free pages run out."""
        r = self._idle(rid)
        self._mark_suspended(r, 1)
        for i, paged in enumerate(self._paged):
            if paged.pool.host is not None:
                paged.pool.parked += [(r, i, b) for b, p in enumerate(r.tables[i]) if p != NO_PAGE]
        r.suspended = True
        self._live -= 1
        self._capacity_tokens -= r.capacity

    def resume(self, rid: RequestId) -> None:
        """Bring a suspended request back onto its own pages: refused (ResumeRefusedError)
        while any pool is above max_util_for_resume (compared as a float32), taken pages
        counted and the block-reuse cache not (TensorRT-LLM V2 checks before the resume).

        With a host tier, its pages moved there come back into free pages, other parked pages
        moving to the host tier to make room; refused (OutOfPagesError) when a pool cannot
        make that room. The engine then parks the request's pages again as the newest: so
        does the shim, the only change a refused resume makes."""
        r = self._get(rid)
        if not r.suspended:
            raise InvalidStepError(f"request {rid!r} is not suspended")
        if self._live >= self.max_batch_size:
            raise InvalidStepError(f"batch is full: {self.max_batch_size} live requests")
        self._check_watermark()
        if r.hosted:
            parked = self._unpark(r)
            back: dict[int, int] = {}
            for i, _block in r.hosted:
                back[id(self._paged[i].pool)] = back.get(id(self._paged[i].pool), 0) + 1
            for i, _block in r.hosted:
                pool = self._paged[i].pool
                if back[id(pool)] > pool.available:
                    for entry in parked:  # the engine schedules them for eviction again
                        self._paged[entry[1]].pool.parked.append(entry)
                    raise OutOfPagesError(pool.manager, pool.name, back[id(pool)], pool.available)
        self._mark_suspended(r, -1)
        self._unpark(r)
        for i, block in sorted(r.hosted):
            self._paged[i].pool.restore(r, i, block)
        r.suspended = False
        self._live += 1
        self._capacity_tokens += r.capacity
        self._note_peak()

    def _check_watermark(self) -> None:
        """TensorRT-LLM V2's rule for a resume (and so for an admission): the most utilised
        attention pool of every manager at or below the watermark before anything moves.
        Recurrent-state and cross-attention pools hold exactly B requests' slots (no V2
        revision run here has them), so they are left to their own free-page checks."""
        for paged in self._paged:
            pool = paged.pool
            if pool.utilisation > self._util32:
                raise ResumeRefusedError(pool.manager, pool.name, pool.utilisation, self._util32)

    def _unpark(self, r: Request) -> list[tuple[Request, int, int]]:
        """Take ``r``'s pages off every pool's parked list; the entries taken, in order."""
        taken = []
        for pool in {id(p.pool): p.pool for p in self._paged if p.pool.parked}.values():
            taken += [entry for entry in pool.parked if entry[0] is r]
            pool.parked = [entry for entry in pool.parked if entry[0] is not r]
        return taken

    def _mark_suspended(self, r: Request, sign: int) -> None:
        for i, (pool, *_rest) in enumerate(self._paged):
            pool.suspended += sign * sum(1 for p in r.tables[i] if p != NO_PAGE)
        for j, pool in enumerate(self._states):
            pool.suspended += sign * (r.slots[j] != NO_PAGE)
        for j, (pool, _pages) in enumerate(self._cross):
            pool.suspended += sign * len(r.cross[j])
