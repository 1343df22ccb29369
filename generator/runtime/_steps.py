"""Forwards: context chunks and speculative generation steps (§2, §3)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kvgen.runtime._errors import InvalidStepError
from kvgen.runtime._pages import ceil_div, integer, stale_end
from kvgen.runtime._pools import Pool
from kvgen.runtime._state import (
    CONTEXT,
    GENERATION,
    IDLE,
    NO_PAGE,
    Request,
    RequestId,
    ShimState,
)

__all__ = ["Forwards"]

Batch = list[tuple[object, Request]]


class Forwards(ShimState):
    """The forwards of a shim, one part of it over its state (``ShimState``). Each operation
    checks everything first, then changes state: a refusal changes nothing."""

    # ----------------------------------------------------------------- context (§3)

    def begin_context(self, rid: RequestId, tokens: int) -> None:
        """Start a context chunk of ``tokens`` at the request's position p: capacity becomes
        p + tokens + E; the history stays at p until ``end_context``. With scratch reuse
        (targets) the chunk's transient SWA pages, those stale once history reaches
        p + tokens, are held in the life cycle's scratch pool instead."""
        r = self._idle(rid)
        count = integer(tokens)
        if count is None or count < 1:
            raise InvalidStepError(f"tokens must be a positive int, got {tokens!r}")
        if self._context_tokens + count > self.max_num_tokens:
            raise InvalidStepError(
                f"context chunk of {count} tokens exceeds max_num_tokens "
                f"{self.max_num_tokens} ({self._context_tokens} already in flight)"
            )
        if r.history + count > self.max_seq_len:
            raise InvalidStepError(
                f"request {rid!r}: history {r.history} + {count} exceeds max_seq_len "
                f"{self.max_seq_len}"
            )
        tpb = self.tokens_per_block
        capacity = r.history + count + self.extra_tokens
        held = ceil_div(capacity, self.page_span)
        after = r.history + count
        plan: list[tuple[int, int, tuple[int, int] | None]] = []  # (index, pages, transient)
        # Life cycles sharing a pool (one engine pool group) draw on one free list: checked
        # for their sum.
        shared: dict[int, tuple[Pool, int]] = {}
        for i, (pool, window, sink_blocks, scratch, chunk) in enumerate(self._paged):
            if scratch is None or window is None:
                need = held - r.held
                total = shared.get(id(pool), (pool, 0))[1] + need
                shared[id(pool)] = (pool, total)
                plan.append((i, need, None))
                continue
            start, end = r.stale[i], stale_end(after, window, sink_blocks, tpb, chunk)
            moved = max(0, min(end, r.held) - start)
            need = held - max(r.held, end)
            self._check_free(pool, need, moved)
            self._check_free(scratch, max(0, end - start))
            plan.append((i, need, (start, end)))
        for pool, total in shared.values():
            self._check_free(pool, total)
        for i, need, transient in plan:
            self._grow_for_chunk(r, i, need, transient)
        self._capacity_tokens += capacity - r.capacity
        self._context_tokens += count
        r.capacity, r.held, r.chunk, r.phase = capacity, held, count, CONTEXT
        self._note_peak()

    def _grow_for_chunk(
        self, r: Request, i: int, need: int, transient: tuple[int, int] | None
    ) -> None:
        pool, _w, _sb, scratch, _c = self._paged[i]
        table = r.tables[i]
        if transient is None or scratch is None:
            table += pool.take(need)
            return
        start, end = transient
        for x in range(start, min(end, r.held)):  # move to scratch: freed, then reused
            pool.recycled.append(table[x])
            table[x] = NO_PAGE
        table += [NO_PAGE] * max(0, end - r.held)
        table += pool.take(need)
        if end > start:
            r.scratch[i] = scratch.take(end - start)

    def _drop_stale(self, pool: Pool, table: list[int], start: int, end: int) -> None:
        """Release the pages ``[start, end)`` gone out of the window: whole committed blocks,
        so with block reuse they stay cached (TensorRT-LLM V2)."""
        pages = []
        for x in range(start, end):
            if table[x] != NO_PAGE:
                pages.append(table[x])
                table[x] = NO_PAGE
        self._drop(pool, pages, len(pages))

    def end_context(self, rid: RequestId) -> None:
        """Finish the chunk: history advances, stale and scratch pages are released."""
        r = self._get(rid)
        if r.phase != CONTEXT:
            raise InvalidStepError(f"request {rid!r} has no context chunk in flight")
        tpb = self.tokens_per_block
        r.history += r.chunk
        for i, (pool, window, sink_blocks, scratch, chunk) in enumerate(self._paged):
            if window is None:
                continue
            if i in r.scratch and scratch is not None:
                scratch.recycled.extend(r.scratch.pop(i))
            end = stale_end(r.history, window, sink_blocks, tpb, chunk)
            self._drop_stale(pool, r.tables[i], r.stale[i], end)
            r.stale[i] = max(r.stale[i], end)
        self._context_tokens -= r.chunk
        r.chunk, r.phase = 0, IDLE

    def context_chunk(self, rid: RequestId, tokens: int) -> None:
        """A whole context forward: ``begin_context`` then ``end_context``."""
        self.begin_context(rid, tokens)
        self.end_context(rid)

    # ----------------------------------------------------------------- generation (§2, §3)

    def begin_generation(self, rids: Iterable[RequestId]) -> None:
        """Grow each request's capacity by 1 + draft slots (+ K with overlap slack)."""
        self._grow(self._generation_batch(rids))

    def end_generation(self, rids: Iterable[RequestId], accepted: int | Sequence[int] = 0) -> None:
        """Accept ``accepted`` draft tokens per request (0..draft slots): history advances by
        accepted + 1, capacity beyond history + E is given back, stale pages are released."""
        requests = self._batch(rids, GENERATION)
        self._commit(requests, self._acceptances(requests, accepted))

    def generation_step(self, rids: Iterable[RequestId], accepted: int | Sequence[int] = 0) -> None:
        """A whole generation forward; refused as a whole before anything grows."""
        requests = self._generation_batch(rids)
        counts = self._acceptances(requests, accepted)
        self._grow(requests)
        self._commit(requests, counts)

    def _generation_batch(self, rids: Iterable[RequestId]) -> Batch:
        requests = self._batch(rids)
        for rid, r in requests:
            if r.history < 1:
                raise InvalidStepError(f"request {rid!r} has no context yet")
            if r.history >= self.max_seq_len:
                raise InvalidStepError(f"request {rid!r} is at max_seq_len {self.max_seq_len}")
        return requests

    def _acceptances(self, requests: Batch, accepted: object) -> list[int]:
        """Draft tokens accepted per request, each checked against the slots and max_seq_len."""
        single = integer(accepted)
        if single is not None:
            given: list[object] = [single] * len(requests)
        elif isinstance(accepted, Iterable) and not isinstance(accepted, str | bytes):
            given = list(accepted)
            if len(given) != len(requests):
                raise InvalidStepError(f"{len(requests)} requests but {len(given)} acceptances")
        else:
            raise InvalidStepError(
                f"accepted must be an int or a sequence of ints, got {accepted!r}"
            )
        counts: list[int] = []
        slots, limit = self.draft_slots, self.max_seq_len
        for (rid, r), value in zip(requests, given, strict=True):
            count = value if type(value) is int else integer(value)
            if count is None or not 0 <= count <= slots:
                raise InvalidStepError(
                    f"request {rid!r}: accepted must be in [0, {slots}] draft tokens, got {value!r}"
                )
            if r.history + count + 1 > limit:
                raise InvalidStepError(
                    f"request {rid!r}: history {r.history} + {count + 1} exceeds max_seq_len "
                    f"{limit}"
                )
            counts.append(count)
        return counts

    def _grow(self, requests: Batch) -> None:
        grow = self.step_tokens
        span = self.page_span  # tpb, or tpb * dcp_size under DCP (docs/cost-model.md §9)
        grown = [ceil_div(r.capacity + grow, span) - r.held for _rid, r in requests]
        total = sum(grown)
        draws: dict[int, tuple[Pool, int]] = {}  # a shared pool serves each of its cycles
        for pool, _w, _sb, _s, _c in self._paged:
            draws[id(pool)] = (pool, draws.get(id(pool), (pool, 0))[1] + total)
        for pool, count in draws.values():
            self._check_free(pool, count)
        for i, (pool, _w, _sb, _s, _c) in enumerate(self._paged):
            pages, at = pool.take(total), 0
            for (_rid, r), count in zip(requests, grown, strict=True):
                if count == 1:
                    r.tables[i].append(pages[at])
                    at += 1
                elif count:
                    r.tables[i] += pages[at : at + count]
                    at += count
        for (_rid, r), count in zip(requests, grown, strict=True):
            r.capacity += grow
            r.held += count
            r.phase = GENERATION
        self._capacity_tokens += grow * len(requests)
        self._note_peak()

    def _commit(self, requests: Batch, counts: list[int]) -> None:
        tpb, extra = self.tokens_per_block, self.extra_tokens
        paged = list(enumerate(self._paged))
        released = 0
        for (_rid, r), count in zip(requests, counts, strict=True):
            history = r.history + count + 1
            capacity = history + extra
            held = ceil_div(capacity, self.page_span)
            for i, (pool, window, _sb, _s, chunk) in paged:
                table = r.tables[i]
                if held < r.held:
                    pool.recycled.extend(table[held:])
                    del table[held:]
                if window is not None:
                    # The stale boundary: of the chunk start, or of the window (§3).
                    end = (
                        history // chunk * chunk // tpb if chunk else (history + 1 - window) // tpb
                    )
                    if end > r.stale[i]:
                        self._drop_stale(pool, table, r.stale[i], end)
                        r.stale[i] = end
            released += r.capacity - capacity
            r.history, r.capacity, r.held, r.phase = history, capacity, held, IDLE
        self._capacity_tokens -= released
