"""Per-request bookkeeping of the shim and the checks every operation makes before it acts."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import NamedTuple

from kvgen.runtime._errors import (
    DoubleFreeError,
    InvalidRequestIdError,
    InvalidStepError,
    OutOfPagesError,
    UnknownRequestError,
)
from kvgen.runtime._pools import NO_PAGE, CacheManager, Pool

__all__ = ["CONTEXT", "GENERATION", "IDLE", "NO_PAGE", "PagedPool", "Request", "ShimState"]

# Request phases: between forwards, inside a context chunk, inside a generation step.
IDLE, CONTEXT, GENERATION = 0, 1, 2

RequestId = Hashable


class PagedPool(NamedTuple):
    """A paged pool as the per-step bookkeeping sees it."""

    pool: Pool
    window: int | None  # None: full attention, no page goes stale
    sink_blocks: int  # pages [0, sink_blocks) never go stale
    scratch: Pool | None  # the life cycle's scratch pool (targets with scratch reuse)
    chunk: int = 0  # chunked attention: pages go stale chunk by chunk (``window`` = chunk)


class Request:
    """One request: its history, capacity, phase and the pages it holds in every pool."""

    __slots__ = (
        "capacity",
        "chunk",
        "cross",
        "held",
        "history",
        "hosted",
        "phase",
        "scratch",
        "slots",
        "stale",
        "suspended",
        "tables",
    )

    def __init__(self, paged: int, states: int, stale: list[int], crosses: int = 0) -> None:
        self.history = 0  # committed tokens
        self.capacity = 0  # tokens with KV space
        self.held = 0  # ceil(capacity / page_span): logical pages covered
        self.phase = IDLE
        self.chunk = 0  # context tokens of the forward in flight
        self.suspended = False
        self.tables: list[list[int]] = [[] for _ in range(paged)]
        self.stale = list(stale)  # per paged pool: pages [sink_blocks, stale) are released
        self.scratch: dict[int, list[int]] = {}  # paged index -> scratch pages of a chunk
        self.slots = [NO_PAGE] * states
        self.cross: list[list[int]] = [[] for _ in range(crosses)]  # encoder pages per pool
        self.hosted: dict[tuple[int, int], int] = {}  # (paged index, block) -> host row


class ShimState:
    """The mutable state of a shim and the lookups that refuse before anything changes."""

    tokens_per_block: int
    page_span: int  # tokens a page covers: tpb, or tpb * dcp_size under DCP (§9)
    max_batch_size: int
    max_num_tokens: int
    max_seq_len: int
    extra_tokens: int
    draft_slots: int
    step_tokens: int
    managers: dict[str, CacheManager]
    _paged: list[PagedPool]
    _paged_index: dict[tuple[str, str], int]  # (manager, life cycle) -> index in _paged
    _states: list[Pool]
    _cross: list[tuple[Pool, int]]  # cross-attention pools and the pages a request takes
    _initial_stale: list[int]
    _util32: float
    block_reuse: bool
    _requests: dict[RequestId, Request]
    _freed: set[RequestId]
    _live: int  # admitted, not suspended
    _capacity_tokens: int  # full-attention capacity of live requests
    _context_tokens: int  # context tokens of forwards in flight

    def _get(self, rid: RequestId) -> Request:
        try:
            r = self._requests.get(rid)
        except TypeError:
            raise InvalidRequestIdError(f"request ids must be hashable, got {rid!r}") from None
        if r is None:
            if rid in self._freed:
                raise DoubleFreeError(f"request {rid!r} was freed")
            raise UnknownRequestError(f"unknown request {rid!r}")
        return r

    def _idle(self, rid: RequestId) -> Request:
        r = self._get(rid)
        if r.suspended:
            raise InvalidStepError(f"request {rid!r} is suspended; resume it first")
        if r.phase != IDLE:
            raise InvalidStepError(f"request {rid!r} is inside a forward; end it first")
        return r

    @staticmethod
    def _ids(rids: Iterable[RequestId]) -> list[RequestId]:
        if isinstance(rids, str | bytes) or not isinstance(rids, Iterable):
            raise InvalidStepError(f"rids must be an iterable of request ids, got {rids!r}")
        return list(rids)

    def _batch(self, rids: Iterable[RequestId], phase: int = IDLE) -> list[tuple[object, Request]]:
        """The requests of one step, all in ``phase`` and each once."""
        requests = []
        for rid in self._ids(rids):
            r = self._idle(rid) if phase == IDLE else self._get(rid)
            if r.phase != phase:
                raise InvalidStepError(f"request {rid!r} has no generation step in flight")
            requests.append((rid, r))
        if len({id(r) for _rid, r in requests}) != len(requests):
            raise InvalidStepError("a request appears twice in one step")
        return requests

    def _note_peak(self) -> None:
        for manager in self.managers.values():
            used = manager.bytes_in_use()
            if used > manager.peak:
                manager.peak = used

    @staticmethod
    def _check_free(pool: Pool, needed: int, released: int = 0) -> None:
        if needed > pool.available + released:
            raise OutOfPagesError(pool.manager, pool.name, needed, pool.available + released)

    def _drop(self, pool: Pool, pages: list[int], committed: int) -> None:
        """Give back ``pages``; with block reuse the first ``committed`` of them hold committed
        blocks and stay as the pool's reusable cache instead (TensorRT-LLM V2)."""
        if self.block_reuse and committed > 0:
            pool.cached.extend(pages[:committed])
            pages = pages[committed:]
        pool.recycled.extend(pages)

    def _release(self, r: Request) -> None:
        """Give every page and slot of ``r`` back to its pool. With block reuse, the pages of
        its committed blocks (every block with history: closing commits the last, partial
        block too) stay cached."""
        committed = -(-r.history // self.page_span)
        for i, (pool, _w, _sb, scratch, _c) in enumerate(self._paged):
            table = r.tables[i]
            kept = [p for p in table[:committed] if p != NO_PAGE]
            self._drop(pool, kept + [p for p in table[committed:] if p != NO_PAGE], len(kept))
            r.tables[i] = []
            if i in r.scratch and scratch is not None:
                scratch.recycled.extend(r.scratch.pop(i))
        for j, pool in enumerate(self._states):
            if r.slots[j] != NO_PAGE:
                pool.recycled.append(r.slots[j])
                r.slots[j] = NO_PAGE
        for j, (pool, _pages) in enumerate(self._cross):
            pool.recycled.extend(r.cross[j])
            r.cross[j] = []
