"""Pool tensors, free-page lists, typed per-layer views, and cache managers."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import torch
from kvgen.runtime._errors import PoolAllocationError
from kvgen.runtime._kinds import SCRATCH, Cycle, Layer

__all__ = ["NO_PAGE", "CacheManager", "Pool", "engine_pool_groups", "select_device"]

NO_PAGE = -1  # block-table entry of a page not held (stale, scratch, past capacity, on host)

Views = dict[str, torch.Tensor]
_MAX_TENSOR_BYTES = (1 << 63) - 1  # torch sizes and numel are int64


def select_device(device: str | torch.device | None = None) -> torch.device:
    """``None``/"auto": cuda when available, else cpu. "cuda" without a GPU falls back to cpu
    with a RuntimeWarning. "cpu" and "meta" (no storage: bookkeeping only) as asked.
    Anything torch does not know as a device raises ``ValueError``."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, str | torch.device):
        raise ValueError(f"device must be a str or torch.device, got {device!r}")
    try:
        chosen = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"device must be 'cuda', 'cpu', 'meta' or 'auto', got {device!r}") from exc
    if chosen.type == "cuda" and not torch.cuda.is_available():
        warnings.warn("CUDA is not available; building the pools on cpu", RuntimeWarning, 2)
        return torch.device("cpu")
    return chosen


class Pool:
    """One pool tensor (raw ``uint8`` pages, or recurrent-state slots) and its free list."""

    def __init__(
        self, manager: str, name: str, kind: str, pages: int, row_bytes: int, device: torch.device
    ) -> None:
        self.manager, self.name, self.kind = manager, name, kind
        self.members: tuple[str, ...] = (name,)  # life cycles whose pages this pool holds
        try:
            if pages * row_bytes > _MAX_TENSOR_BYTES:
                raise OverflowError(f"over torch's {_MAX_TENSOR_BYTES} bytes per tensor")
            self.tensor = torch.empty((pages, row_bytes), dtype=torch.uint8, device=device)
        except (RuntimeError, MemoryError, OverflowError, TypeError) as exc:
            # TypeError: torch's own refusal of a size past int64.
            raise PoolAllocationError(
                f"{manager} pool {name!r}: cannot allocate {pages} x {row_bytes} bytes on "
                f"{device}: {exc}; build it on device='meta'"
            ) from exc
        self.pages: int = self.tensor.shape[0]
        self.page_bytes: int = self.tensor.shape[1] * self.tensor.element_size()
        # Free pages: the recycled ones (reused last-in first-out), then [fresh, pages) never
        # handed out, so that a pool of millions of pages costs nothing to build.
        self.recycled: list[int] = []
        self.fresh = 0
        # With block reuse, pages of committed blocks no request holds stay as a reusable
        # cache, oldest first; a page is evicted from it only when the free pages run out
        # (TensorRT-LLM V2: committed pages are scheduled for eviction, not dropped).
        self.cached: list[int] = []
        # Pages of suspended requests: still taken (TensorRT-LLM V2 keeps them, evictable only
        # to a lower tier), not counted as in use by live requests.
        self.suspended = 0
        self.views: dict[str, Views] = {}
        # The host tier (TensorRT-LLM V2's HostCacheTierConfig; none unless the shim is given
        # host_cache_bytes): ``host_pages`` page rows in host memory. With it, the pages of
        # suspended requests still in this pool are ``parked`` (request, paged index, block),
        # oldest first: evictable, and moved to the host tier when the free pages run out.
        self.host_pages = 0
        self.host: torch.Tensor | None = None
        self.host_recycled: list[int] = []
        self.host_fresh = 0
        self.parked: list[tuple[Any, int, int]] = []

    @property
    def nbytes(self) -> int:
        """Bytes of the pool tensor: numel * element_size."""
        return self.tensor.numel() * self.tensor.element_size()

    @property
    def free_pages(self) -> int:
        return len(self.recycled) + self.pages - self.fresh

    @property
    def used(self) -> int:
        """Pages taken: by live requests, by suspended requests, and the reuse cache."""
        return self.fresh - len(self.recycled)

    @property
    def live(self) -> int:
        """Pages held by live requests."""
        return self.used - len(self.cached) - self.suspended

    @property
    def host_free(self) -> int:
        """Free page rows of the host tier (0 without one)."""
        return len(self.host_recycled) + self.host_pages - self.host_fresh

    @property
    def evictable(self) -> int:
        """Taken pages the engine may evict: the reuse cache and, with a host tier, the
        parked pages of suspended requests."""
        return len(self.cached) + len(self.parked)

    @property
    def available(self) -> int:
        """Free pages plus the reuse cache, which is evicted on demand, and the parked pages
        the host tier has room for."""
        return self.free_pages + len(self.cached) + min(len(self.parked), self.host_free)

    @property
    def utilisation(self) -> float:
        """Taken and not evictable, over all pages: TensorRT-LLM V2's resume watermark counts
        evictable (cached, and with a host tier parked) pages as available."""
        return (self.used - self.evictable) / self.pages if self.pages else 0.0

    def take(self, count: int) -> list[int]:
        """``count`` free pages (the caller has checked that there are enough); cached pages
        are evicted, oldest first, only for what the free pages lack."""
        short = count - self.free_pages
        if short > 0:
            self.recycled.extend(self.cached[:short])
            del self.cached[:short]
        if count > self.free_pages:
            self.offload(count - self.free_pages)
        recycled = self.recycled
        reuse = min(count, len(recycled))
        pages = recycled[len(recycled) - reuse :]
        del recycled[len(recycled) - reuse :]
        pages.reverse()
        if reuse < count:
            start = self.fresh
            self.fresh = start + count - reuse
            pages += range(start, self.fresh)
        return pages

    def offload(self, count: int) -> None:
        """Move the ``count`` oldest parked pages to the host tier (the caller has checked
        that it has room): each page's row is copied to a host row, its block-table entry
        becomes NO_PAGE and the request notes the host row (``hosted``)."""
        assert self.host is not None
        for r, i, block in self.parked[:count]:
            page = r.tables[i][block]
            if self.host_recycled:
                row = self.host_recycled.pop()
            else:
                row, self.host_fresh = self.host_fresh, self.host_fresh + 1
            self.host[row].copy_(self.tensor[page])
            r.tables[i][block] = NO_PAGE
            r.hosted[(i, block)] = row
            self.recycled.append(page)
        del self.parked[:count]
        self.suspended -= count

    def restore(self, r: Any, i: int, block: int) -> None:
        """Bring one hosted page of ``r`` back into a free page of this pool."""
        assert self.host is not None
        row = r.hosted.pop((i, block))
        page = self.take(1)[0]
        self.tensor[page].copy_(self.host[row])
        r.tables[i][block] = page
        self.host_recycled.append(row)


def _slot_sizes(cycle: Cycle, tpb: int) -> tuple[int, ...] | None:
    """The engine's slot-size list of a life cycle: its buffers grouped by size, each group
    one coalesced buffer of size x count, largest first; None when the shim's page row is
    not exactly those buffers (then it shares no pool)."""
    counts: dict[int, int] = {}
    for layer in cycle.layers:
        for _name, dtype, shape in layer.buffers:
            size = tpb * math.prod(shape) * dtype.itemsize
            counts[size] = counts.get(size, 0) + 1
    sizes = tuple(sorted((size * n for size, n in counts.items()), reverse=True))
    return sizes if sum(sizes) == tpb * cycle.token_bytes else None


def engine_pool_groups(cycles: list[Cycle], tpb: int) -> dict[str, tuple[str, ...]]:
    """Full and sliding life cycles whose slot-size lists are equal, by name: each maps to
    the names of its group, in life-cycle order (groups of one are left out)."""
    by_sizes: dict[tuple[int, ...], list[str]] = {}
    for cycle in cycles:
        if not cycle.life.pool_group:
            continue
        sizes = _slot_sizes(cycle, tpb)
        if sizes is not None:
            by_sizes.setdefault(sizes, []).append(cycle.name)
    return {n: tuple(names) for names in by_sizes.values() if len(names) > 1 for n in names}


def _layer_views(tensor: torch.Tensor, offset: int, layer: Layer, tpb: int) -> Views:
    """Typed views of one layer's buffers, laid out from ``offset`` in every page row."""
    views = {}
    # Widest elements first so that every typed buffer starts aligned to its element size.
    for name, dtype, shape in sorted(layer.buffers, key=lambda b: -b[1].itemsize):
        nbytes = tpb * math.prod(shape) * dtype.itemsize
        raw = tensor[:, offset : offset + nbytes]
        try:
            views[name] = raw.view(dtype).view(tensor.shape[0], tpb, *shape)
        except RuntimeError:  # misaligned rows (tokens_per_block < 4 with odd raw sizes)
            views[name] = raw.view(tensor.shape[0], tpb, -1)
        offset += nbytes
    return views


class CacheManager:
    """The pools of one cache manager ("target" or "draft") and their layer views."""

    def __init__(self, name: str, layers: list[Layer], cycles: list[Cycle]) -> None:
        self.name, self.layers, self.cycles = name, layers, cycles
        self.pools: dict[str, Pool] = {}
        self.peak = 0

    def build(
        self,
        pages: Mapping[str, int],
        tpb: int,
        share: bool,
        scratch: bool,
        device: torch.device,
    ) -> None:
        """One pool per pool group, ``pages[name]`` pages for each life cycle in it, and one
        per SWA scratch pool. Life cycles of full and sliding attention whose pages have the
        same slot sizes share one pool, as TensorRT-LLM V2 puts them in one pool group
        (``_storage/_config.py`` ``create_storage_config``): their pages come from one free
        list, and ``pools[name]`` is that shared pool for each of them."""
        shared = engine_pool_groups(self.cycles, tpb) if share and not scratch else {}
        for cycle in self.cycles:
            if cycle.life.slots:
                self._build_state(cycle, pages[cycle.name], device)
                continue
            members = shared.get(cycle.name, (cycle.name,))
            if cycle.name != members[0]:  # built with the group's first life cycle
                pool = self.pools[cycle.name] = self.pools[members[0]]
            else:
                row = tpb * cycle.token_bytes
                total = sum(pages[name] for name in members)
                pool = Pool(self.name, "+".join(members), cycle.kind, total, row, device)
                pool.members = members
                self.pools[cycle.name] = pool
            offset = 0  # a page holds one life cycle's layers at a time: views may overlap
            for layer in cycle.layers:
                pool.views[layer.name] = _layer_views(pool.tensor, offset, layer, tpb)
                offset += tpb * layer.bytes_per_token
            if scratch and cycle.life.scratch:
                self._build_scratch(cycle, pages[cycle.name + SCRATCH], tpb, device)

    def distinct_pools(self) -> list[Pool]:
        """Every pool once (a shared pool group is under each of its life cycles' names)."""
        return list({id(pool): pool for pool in self.pools.values()}.values())

    def _build_state(self, cycle: Cycle, slots: int, device: torch.device) -> None:
        pool = Pool(self.name, cycle.name, cycle.kind, slots, cycle.state_bytes, device)
        self.pools[cycle.name] = pool
        offset = 0
        for layer in cycle.layers:
            views = {"state": pool.tensor[:, offset : offset + layer.state_bytes]}
            conv = layer.mamba[0]
            if conv:  # given by dimensions: the conv window first, then the SSM state (§8)
                views["conv"] = pool.tensor[:, offset : offset + conv]
                views["ssm"] = pool.tensor[:, offset + conv : offset + layer.state_bytes]
            pool.views[layer.name] = views
            offset += layer.state_bytes

    def _build_scratch(self, cycle: Cycle, pages: int, tpb: int, device: torch.device) -> None:
        shared = cycle.scratch_layers
        name = cycle.name + SCRATCH
        row = tpb * sum(layer.bytes_per_token for layer in shared)
        pool = self.pools[name] = Pool(self.name, name, "scratch", pages, row, device)
        offsets, offset = {}, 0
        for layer in shared:
            offsets[layer.bytes_per_token] = offset
            offset += tpb * layer.bytes_per_token
        for layer in cycle.layers:  # layers with one (w, b) key share scratch pages
            pool.views[layer.name] = _layer_views(
                pool.tensor, offsets[layer.bytes_per_token], layer, tpb
            )

    def bytes_in_use(self) -> int:
        """Bytes of the pages and slots live requests hold."""
        return sum(pool.live * pool.page_bytes for pool in self.distinct_pools())

    def evictable_bytes(self) -> int:
        """Bytes taken but evictable: suspended requests' pages (to a lower tier) and the
        block-reuse cache."""
        return sum(
            (pool.suspended + len(pool.cached)) * pool.page_bytes for pool in self.distinct_pools()
        )

    def quota_bytes(self) -> int:
        return sum(pool.nbytes for pool in self.distinct_pools())
