"""What a shim reports: quotas, bytes in use and peak, views, block tables, request states."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from kvgen.runtime._errors import UnknownNameError
from kvgen.runtime._kinds import SCRATCH, PagePlanner
from kvgen.runtime._pages import integer
from kvgen.runtime._pools import CacheManager, Pool
from kvgen.runtime._recurrent import StateRows
from kvgen.runtime._state import NO_PAGE, RequestId, ShimState
from kvgen.runtime._tables import FamilyTables

__all__ = ["Reports"]


class Reports(ShimState):
    """Read-only questions about a shim, one part of it over its state (``ShimState``); none
    of them changes that state."""

    tables: FamilyTables
    cacheless: dict[str, dict[str, str]]
    shared: dict[str, dict[str, str]]
    _planner: PagePlanner
    max_blocks_per_seq: int
    state_rows: dict[str, StateRows]

    def quota_bytes(self) -> dict[str, int]:
        """Runtime quota: bytes of the pools built, per manager (numel * element_size)."""
        return {name: m.quota_bytes() for name, m in self.managers.items()}

    def max_tokens(self) -> dict[str, int | None]:
        """Runtime max_tokens: the largest T whose derived pools fit the bytes built."""
        # The planner sizes one state slot per request; the engine's reserved rows and
        # speculative state buffers are fixed bytes beside it (§8).
        return {
            name: self._planner.largest_tokens(
                m.name, m.cycles, max(m.quota_bytes() - self.state_rows[name].extra_bytes, 0)
            )
            for name, m in self.managers.items()
        }

    def bytes_in_use(self) -> dict[str, int]:
        """Bytes of the pages and slots held by requests, per manager."""
        return {name: m.bytes_in_use() for name, m in self.managers.items()}

    def evictable_bytes(self) -> dict[str, int]:
        """Bytes taken but not in use by live requests, per manager: suspended requests' pages
        (evictable to a lower tier) and, with block reuse, the cache of committed blocks."""
        return {name: m.evictable_bytes() for name, m in self.managers.items()}

    def pool_bytes_in_use(self, manager: str = "target") -> dict[str, int]:
        """Bytes live requests hold, per pool of ``manager``."""
        pools = self._manager(manager).pools
        out = {}
        for name, pool in pools.items():
            if len(pool.members) == 1:
                out[name] = pool.live * pool.page_bytes
                continue
            # A shared pool group: the pages live requests hold in this life cycle.
            i = self._paged_index[(manager, name)]
            live = (r for r in self._requests.values() if not r.suspended)
            out[name] = sum(p != NO_PAGE for r in live for p in r.tables[i]) * pool.page_bytes
        return out

    def peak_bytes(self) -> dict[str, int]:
        """The most bytes in use each manager has reached."""
        return {name: m.peak for name, m in self.managers.items()}

    @property
    def capacity_tokens(self) -> int:
        """T(t): full-attention capacity tokens summed over live (not suspended) requests."""
        return self._capacity_tokens

    @property
    def requests(self) -> tuple[RequestId, ...]:
        return tuple(self._requests)

    def request_state(self, rid: RequestId) -> tuple[int, int]:
        """(history, capacity) of a request."""
        r = self._get(rid)
        return r.history, r.capacity

    def layer_views(self, layer: str | int, manager: str = "target") -> dict[str, torch.Tensor]:
        """Typed views of a layer in its main pool: ``k``/``v`` (pages, tpb, heads, head_dim),
        ``latent`` (MLA), ``raw``/``extra`` (uint8), ``*_scale`` (NVFP4), ``state`` (slots).
        A layer that reads another layer's cache (KV sharing) gets that layer's views.

        ``layer`` is a name such as ``"layers.5"`` or the model's layer index ``5``."""
        if not isinstance(layer, str):
            index = integer(layer)
            if index is None:
                raise UnknownNameError(f"layer must be a name or an index, got {layer!r}")
            layer = f"layers.{index}"
        # KV sharing: a layer that reads another layer's cache sees that layer's views.
        layer = self.shared.get(manager, {}).get(layer, layer)
        found = {
            id(pool.views[layer]): pool.views[layer]
            for pool in self._manager(manager).pools.values()
            if layer in pool.views and not pool.name.endswith(SCRATCH)
        }
        if len(found) == 1:
            return next(iter(found.values()))
        if found:  # a parallel hybrid layer (Falcon-H1): its K/V and its state, in one dict
            return {name: view for views in found.values() for name, view in views.items()}
        kind = self.cacheless.get(manager, {}).get(layer)
        if kind is not None:
            raise UnknownNameError(
                f"{manager} layer {layer!r} is cache-less (kind {kind!r}, attention: none): "
                "it has no pool and no views"
            )
        raise UnknownNameError(f"{manager} holds no layer {layer!r}")

    def pool(self, name: str, manager: str = "target") -> Pool:
        pools = self._manager(manager).pools
        try:
            return pools[name]
        except (KeyError, TypeError):
            known = ", ".join(pools)
            raise UnknownNameError(f"{manager} has no pool {name!r} (pools: {known})") from None

    def block_table(self, rid: RequestId, pool: str, manager: str = "target") -> torch.Tensor:
        """One request's row of :meth:`block_tables`."""
        return self.block_tables([rid], pool, manager)[0]

    def block_tables(
        self, rids: Iterable[RequestId], pool: str, manager: str = "target"
    ) -> torch.Tensor:
        """``torch.int32`` block tables, one row per request, width max_blocks_per_seq, padded
        with NO_PAGE (a state pool gives one slot per request instead; a cross-attention pool
        the request's encoder pages, width ceil(encoder_tokens / tpb))."""
        target = self.pool(pool, manager)
        requests = [self._get(rid) for rid in self._ids(rids)]
        if target in self._states:  # one slot per request
            index = self._states.index(target)
            return torch.tensor([r.slots[index] for r in requests], dtype=torch.int32)
        cross = [j for j, (p, _n) in enumerate(self._cross) if p is target]
        if cross:  # held from admission to release, never paged by history
            index, size = cross[0], self._cross[cross[0]][1]
            held = [r.cross[index] + [NO_PAGE] * (size - len(r.cross[index])) for r in requests]
            return torch.tensor(held, dtype=torch.int32).reshape(len(held), size)
        scratch = [i for i, p in enumerate(self._paged) if p.scratch is target]
        if (manager, pool) not in self._paged_index and not scratch:
            # state/spec, state/replay: the engine's rows, indexed by batch slot
            raise UnknownNameError(
                f"{manager} pool {pool!r} holds the engine's rows by batch slot, not rows "
                "of a request: it has no block table"
            )
        width = self.max_blocks_per_seq
        rows = []
        for r in requests:
            if scratch:
                index = scratch[0]
                row = [NO_PAGE] * r.held
                pages = r.scratch.get(index, [])
                row[r.stale[index] : r.stale[index] + len(pages)] = pages
            else:
                index = self._paged_index[(manager, pool)]
                row = r.tables[index]
            rows.append(row + [NO_PAGE] * (width - len(row)))
        return torch.tensor(rows, dtype=torch.int32).reshape(len(rows), width)

    def _manager(self, name: str) -> CacheManager:
        try:
            return self.managers[name]
        except (KeyError, TypeError):
            names = ", ".join(self.managers)
            raise UnknownNameError(f"manager must be one of {names}; got {name!r}") from None
