"""The shim runtime: real torch pools and the runtime page model for one family's tables.

Generated allocators (``generated/<family>/allocator.py``) hold their family's tables and a
thin subclass of :class:`KVCacheShim`; everything else lives here, once. Usage with
hand-built tables::

    from kvgen.runtime import allocator as rt

    kind = rt.LayerKind("full", kv_heads=8, head_dim=128, dtype="bf16")
    model = rt.ModelTable(max_seq_len=4096, stack=rt.LayerStack(32, ("g",), {"g": kind}))
    tables = rt.FamilyTables(family="tiny", tokens_per_block=16, models={"m": model})
    shim = rt.KVCacheShim(tables, "m", max_batch_size=2, max_num_tokens=256,
                          max_seq_len=1024, max_tokens=2048, device="meta")
    shim.quota_bytes()  # {"target": 2048 tokens * 32 layers * (K+V) 2 * 8 * 128 * 2 bytes}

Every size is derived here from the layer shapes; the runtime never consults the static cost
model, so the diff suite can compare the two (docs/cost-model.md §3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from kvgen.runtime._dcp import DecodeContextParallel, check_dcp
from kvgen.runtime._errors import (
    AllocatorError,
    DoubleFreeError,
    DuplicateRequestError,
    InvalidRequestIdError,
    InvalidStepError,
    OutOfPagesError,
    PoolAllocationError,
    QuotaTooSmallError,
    RequestError,
    ResumeRefusedError,
    UnknownNameError,
    UnknownRequestError,
)
from kvgen.runtime._host import host_rows
from kvgen.runtime._kinds import PagePlanner, layer_rule
from kvgen.runtime._layers import Layer, cycles, resolve_layers
from kvgen.runtime._pages import (
    ceil_div,
    float32,
    integer,
    live_pages,
    mode_headroom,
    peak_live_pages,
)
from kvgen.runtime._pools import CacheManager, Pool, _slot_sizes, select_device
from kvgen.runtime._recurrent import MAMBA_STATE_UPDATES, StateRows, state_rows
from kvgen.runtime._reports import Reports
from kvgen.runtime._requests import RequestLifecycle
from kvgen.runtime._state import NO_PAGE, PagedPool, RequestId
from kvgen.runtime._steps import Forwards
from kvgen.runtime._tables import (
    FamilyTables,
    LayerKind,
    LayerStack,
    ModelTable,
    SpeculativeProfile,
)
from kvgen.runtime._version import RUNTIME_VERSION, require_version
from kvgen.sizing import facts

__all__ = [
    "NO_PAGE",
    "RUNTIME_VERSION",
    "SEMANTICS",
    "AllocatorError",
    "CacheManager",
    "DoubleFreeError",
    "DuplicateRequestError",
    "FamilyTables",
    "InvalidRequestIdError",
    "InvalidStepError",
    "KVCacheShim",
    "Layer",
    "LayerKind",
    "LayerStack",
    "ModelTable",
    "OutOfPagesError",
    "Pool",
    "PoolAllocationError",
    "QuotaTooSmallError",
    "RequestError",
    "ResumeRefusedError",
    "SpeculativeProfile",
    "UnknownNameError",
    "UnknownRequestError",
    "live_pages",
    "peak_live_pages",
    "require_version",
    "select_device",
]

SEMANTICS = ("trtllm-v2", "exact")
POOL_GROUPINGS = ("engine", "life_cycle")  # pools per engine pool group, or per life cycle
Quota = int | Mapping[str, int]


# torch sizes and every engine's counts are 64-bit: past this no pool can be built.
MAX_COUNT = (1 << 63) - 1


def _count(name: str, value: object, minimum: int) -> int:
    """``value`` as a plain int in [minimum, MAX_COUNT]; else InvalidStepError (an
    AllocatorError and a ValueError) naming the argument."""
    number = integer(value)
    shown = f"an int of {number.bit_length()} bits" if number is not None else repr(value)
    if number is not None and number.bit_length() <= 256:
        shown = repr(number)
    if number is None or number < minimum:  # worded as the sizing interpreter words it
        kind = "a positive int" if minimum == 1 else "a non-negative int"
        raise InvalidStepError(f"{name} must be {kind}, got {shown}")
    if number > MAX_COUNT:
        raise InvalidStepError(f"{name} must be <= {MAX_COUNT} (a 64-bit count), got {shown}")
    return number


def _choice(name: str, value: object, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


class KVCacheShim(RequestLifecycle, Forwards, Reports):
    """Real pools for one configuration, and the runtime page model that drives them.

    Composed of three parts over one state (``ShimState``: requests, pools, the lookups that
    refuse before anything changes), none built on another: ``RequestLifecycle`` (admission,
    release, suspend, resume), ``Forwards`` (context chunks, generation steps) and ``Reports``
    (read-only questions). This class builds the state.

    Give ``max_tokens`` (T: tokens of full-attention history the pools must hold) or
    ``quota_bytes`` (an int for every manager, or ``{"target": ..., "draft": ...}``); with a
    quota the shim finds the largest T whose pools fit. ``pool_pages`` overrides the derived
    page count of named pools (``{(manager, pool): pages}``: what-if sizing, drift tests);
    ``reserve_pages`` adds pages to every paged pool (lets adversarial workloads run past a
    sizing's rounding without changing what is measured).

    Pools per manager: ``"full"`` (every full-attention layer), one ``"w<window>[s<sinks>]"``
    per sliding-window life cycle, ``"w.../scratch"`` (targets with scratch reuse) and
    ``"state"`` (recurrent layers: one slot per request plus the engine's reserved rows),
    ``"cross"`` (cross-attention layers: ``ceil(encoder_tokens/tpb)`` pages per request, taken
    at admission and held until the request leaves; ``encoder_tokens=`` overrides the spec),
    and under speculative decoding ``"state/spec"`` (intermediate states) and, with
    ``mamba_state_update="replay"``, ``"state/replay"`` (docs/cost-model.md §8).
    ``attention_dp=True`` holds whole KV heads and states on every rank (tp = 1 for the caches)
    and one more reserved state row (§9).

    ``pool_groups="engine"`` (the default) follows TensorRT-LLM V2: full and sliding life
    cycles whose pages have the same slot sizes (the engine's coalesced buffers) share one
    pool, as the engine puts them in one pool group: ``pool(name)`` of each is that pool
    (named ``"full+w128"``, its pages the sum of theirs), drawn from one free list, while
    block tables, views and :meth:`pool_bytes_in_use` stay per life cycle. The bytes are
    unchanged (equal page bytes), so the static side charges the same; the difference is
    that one life cycle may use pages another leaves free. ``"life_cycle"``: one pool each.

    ``host_cache_bytes`` (off by default) gives every manager TensorRT-LLM V2's host tier
    (``HostCacheTierConfig(quota=...)`` after the GPU tier; an int for every manager, or a
    mapping by manager): the quota is split into host page rows per pool as the engine splits
    it (2 MiB grains, :mod:`kvgen.runtime._host`). A suspended request's pages are then
    parked: evictable, so they leave the resume watermark's count, and moved to host rows
    (copied), oldest parked first, when a pool's free pages run out; resuming brings them
    back into free pages. Without it, suspended pages stay taken (the engine's single tier).
    Refused with ``block_reuse`` (the engine's one eviction order across the reuse cache and
    parked pages is not modelled).

    ``dcp_size`` d (decode context parallelism, §9) makes this shim one rank (``dcp_rank``) of
    a DCP group: full-attention pages hold tpb tokens of this rank, a block-table entry spans
    tpb * d tokens of the request, token t lives on rank ``(t // dcp_interleave) % d``
    (:meth:`dcp_slot`), and every rank holds the same number of pages. Refused (ValueError)
    where the engines refuse it: sliding windows, tp_size not a multiple of d, d above
    tp_size // kv_heads, attention_dp.
    """

    def __init__(
        self,
        tables: FamilyTables,
        model: str,
        *,
        speculative: str = "none",
        max_batch_size: int,
        max_num_tokens: int,
        max_seq_len: int,
        max_tokens: int | None = None,
        quota_bytes: Quota | None = None,
        tp_size: int = 1,
        pp_size: int = 1,
        pp_rank: int = 0,
        scratch_reuse: bool = False,
        block_reuse: bool = False,
        max_util_for_resume: float = 0.95,
        overlap_slack: bool = False,
        semantics: str = "trtllm-v2",
        attention_dp: bool = False,
        mamba_state_update: str = "default",
        dcp_size: int = 1,
        dcp_rank: int = 0,
        dcp_interleave: int = 1,
        encoder_tokens: int | None = None,
        device: str | torch.device | None = None,
        pool_pages: Mapping[tuple[str, str], int] | None = None,
        reserve_pages: int = 0,
        pool_groups: str = "engine",
        host_cache_bytes: Quota | None = None,
    ) -> None:
        self.tables = tables
        self.model = _choice("model", model, tables.model_names)
        self.speculative = _choice("speculative", speculative, tables.profile_names)
        if speculative not in tables.models[model].profiles:
            raise ValueError(
                f"speculative {speculative!r} does not apply to model {model!r}; "
                f"profiles for {model}: {', '.join(tables.models[model].profiles)}"
            )
        native, stack, _profiles = tables.models[model]
        self.max_batch_size = _count("max_batch_size", max_batch_size, 1)
        self.max_num_tokens = _count("max_num_tokens", max_num_tokens, 1)
        self.max_seq_len = _count("max_seq_len", max_seq_len, 1)
        if self.max_seq_len > native:
            raise ValueError(f"max_seq_len must be <= {native} for {model}, got {max_seq_len}")
        tp = _count("tp_size", tp_size, 1)
        pp = _count("pp_size", pp_size, 1)
        if pp > stack.count:
            raise ValueError(f"pp_size must be <= {stack.count} layers, got {pp_size}")
        rank = integer(pp_rank)
        if rank is None or not 0 <= rank < pp:
            raise ValueError(f"pp_rank must be in [0, {pp}), got {pp_rank!r}")
        if (
            isinstance(max_util_for_resume, bool)
            or not isinstance(max_util_for_resume, int | float)
            or not 0.0 < max_util_for_resume <= 1.0
        ):
            raise ValueError(f"max_util_for_resume must be in (0, 1], got {max_util_for_resume!r}")
        self.semantics = _choice("semantics", semantics, SEMANTICS)
        if attention_dp is not True and attention_dp is not False:
            raise ValueError(f"attention_dp must be True or False, got {attention_dp!r}")
        self.attention_dp = attention_dp
        self.mamba_state_update = _choice(
            "mamba_state_update", mamba_state_update, MAMBA_STATE_UPDATES
        )
        self.dcp = self._dcp(stack, tp, dcp_size, dcp_rank, dcp_interleave)
        self.encoder_tokens = self._encoder_tokens(stack, encoder_tokens)
        if attention_dp:
            tp = 1  # attention-DP: every rank holds whole KV heads and whole states (§9)
        if (max_tokens is None) == (quota_bytes is None):
            raise ValueError("give exactly one of max_tokens and quota_bytes")
        tokens = None if max_tokens is None else _count("max_tokens", max_tokens, 0)
        reserve = _count("reserve_pages", reserve_pages, 0)
        self.tokens_per_block = tpb = tables.tokens_per_block
        self.page_span = tpb * self.dcp.size  # one page on each DCP rank (§9)
        self.scratch_reuse = bool(scratch_reuse)
        # "engine": life cycles of equal slot sizes share one pool, as in TensorRT-LLM V2;
        # "life_cycle": one pool each (kvgen's per-life-cycle view).
        self.pool_groups = _choice("pool_groups", pool_groups, POOL_GROUPINGS)
        self.max_util_for_resume = float(max_util_for_resume)
        self.device = select_device(device)
        mode, k, tree = tables.profiles[speculative]
        headroom = mode_headroom(mode, k, tree)
        self.extra_tokens = headroom.extra_tokens  # E: capacity - history before a step
        self.draft_slots = headroom.draft_slots
        self.step_tokens = 1 + headroom.draft_slots + (k if overlap_slack else 0)
        self.headroom = headroom.extra_tokens + self.step_tokens  # H at the step's peak
        blocks = ceil_div(self.max_seq_len + self.headroom, self.page_span)
        self.max_blocks_per_seq = ceil_div(blocks, 4) * 4
        self._util32 = float32(self.max_util_for_resume)
        self.block_reuse = bool(block_reuse)  # committed blocks stay as a reusable cache
        backoff = headroom.backoff if block_reuse else 0
        self.managers = self._managers(stack, tp, pp, rank, backoff)
        self._planner = PagePlanner(
            tpb,
            self.max_batch_size,
            self.max_num_tokens,
            self.semantics == "exact",
            self.scratch_reuse,
            self.headroom,
            self.extra_tokens,
            self._util32,
            self.dcp.size,
        )
        budgets = self._budgets(quota_bytes)
        overrides = self._overrides(pool_pages)
        plans = {}
        self.planned_tokens: dict[str, int | None] = {}
        self.state_rows: dict[str, StateRows] = {}
        for name, manager in self.managers.items():
            rows = state_rows(
                manager,
                self.max_batch_size,
                tables.profiles[speculative],
                attention_dp=attention_dp,
                update=self.mamba_state_update,
            )
            self.state_rows[name] = rows
            planned = tokens
            if planned is None:
                budget = max(budgets[name] - rows.extra_bytes, 0)
                planned = self._planner.largest_tokens(manager.name, manager.cycles, budget)
            self.planned_tokens[name] = planned
            pages = self._planner.pages(
                manager.name, manager.cycles, self.max_num_tokens if planned is None else planned
            )
            overridden = set(overrides)
            slots = {cycle.name for cycle in manager.cycles if cycle.life.slots}
            for pool in pages:
                pages[pool] = overrides.pop((name, pool), pages[pool])
                if pool not in slots:
                    pages[pool] += reserve
            for pool in slots:  # the engine's reserved rows, unless the pages are given
                if (name, pool) not in overridden:
                    pages[pool] += rows.reserved
            plans[name] = pages
        if overrides:
            raise ValueError(f"pool_pages names unknown pools: {sorted(overrides)}")
        for name, manager in self.managers.items():
            scratch = self.scratch_reuse and name == "target"
            share = self.pool_groups == "engine" and not scratch
            manager.build(plans[name], tpb, share, scratch, self.device)
            self.state_rows[name].build(manager, self.device)
        self._layout()
        self._build_host(host_cache_bytes)

    # ----------------------------------------------------------------- construction

    def _managers(
        self, stack: LayerStack, tp_size: int, pp_size: int, pp_rank: int, backoff: int
    ) -> dict[str, CacheManager]:
        base, rem = divmod(stack.count, pp_size)
        start = pp_rank * base + min(pp_rank, rem)
        own = range(start, start + base + (1 if pp_rank < rem else 0))
        last = pp_rank == pp_size - 1  # draft layers live with the last pipeline stage
        # Layers of this rank that hold no cache (attention: none), per manager: name -> kind.
        self.cacheless: dict[str, dict[str, str]] = {"target": {}}
        # Layers that read another layer's cache (KV sharing), per manager: reader -> read.
        self.shared: dict[str, dict[str, str]] = {"target": {}}
        common = (tp_size, self.max_seq_len, backoff)
        holders = (self.cacheless["target"], self.shared["target"])
        encoder = self.encoder_tokens
        pipeline = (pp_size, pp_rank)
        target = resolve_layers(stack, "layers", own, *common, *holders, encoder, pipeline)
        extra = self.tables.extra_layers.get((self.model, self.speculative))
        if extra is not None and last:
            target += resolve_layers(
                extra, "extra_layers", range(extra.count), *common, *holders, encoder, pipeline
            )
        managers = {"target": CacheManager("target", target, cycles(target))}
        draft = self.tables.drafts.get(self.speculative)
        if draft is not None:
            self.cacheless["draft"] = {}
            self.shared["draft"] = {}
            layers = []
            if last:
                indices = range(draft.count)
                holders = (self.cacheless["draft"], self.shared["draft"])
                layers = resolve_layers(
                    draft, "draft", indices, *common, *holders, encoder, pipeline
                )
            managers["draft"] = CacheManager("draft", layers, cycles(layers))
        return managers

    def _dcp(
        self, stack: LayerStack, tp: int, size: object, rank: object, interleave: object
    ) -> DecodeContextParallel:
        """The DCP group this shim is one rank of, checked as the engines check it (§9)."""
        dcp = DecodeContextParallel(
            _count("dcp_size", size, 1), 0, _count("dcp_interleave", interleave, 1)
        )
        number = integer(rank)
        if number is None or not 0 <= number < dcp.size:
            raise ValueError(f"dcp_rank must be in [0, {dcp.size}), got {rank!r}")
        stacks = (
            stack,
            self.tables.extra_layers.get((self.model, self.speculative)),
            self.tables.drafts.get(self.speculative),
        )
        check_dcp(self.tables, stacks, tp, self.attention_dp, dcp)
        return dcp._replace(rank=number)

    def dcp_slot(self, rid: RequestId, position: int, pool: str = "full") -> tuple[int, int] | None:
        """Where token ``position`` of request ``rid`` lives on this DCP rank: (page of
        ``pool``, token offset in it), or None when another rank of the group holds it (§9)."""
        r = self._get(rid)
        target = self.pool(pool)
        index = next((i for i, p in enumerate(self._paged) if p.pool is target), None)
        if index is None:  # state, scratch and cross pools hold no history tokens
            raise UnknownNameError(
                f"pool {pool!r} is a {target.kind} pool; dcp_slot maps history tokens of a "
                f"paged attention pool ({', '.join(p.pool.name for p in self._paged)})"
            )
        if r.suspended:
            raise InvalidStepError(f"request {rid!r} is suspended: it holds no pages; resume it")
        at = integer(position)
        if at is None or not 0 <= at < r.capacity:
            raise InvalidStepError(
                f"request {rid!r}: position must be in [0, {r.capacity}), got {position!r}"
            )
        slot = self.dcp.slot(at, self.tokens_per_block)
        return None if slot is None else (r.tables[index][slot[0]], slot[1])

    def _encoder_tokens(self, stack: LayerStack, value: object) -> int | None:
        """The runtime's encoder tokens per request: None keeps each cross-attention kind's
        own count; a positive int up to the spec's count replaces it (§4)."""
        if value is None:
            return None
        most = max((layer_rule(k).encoder_tokens(k, None) for k in stack.kinds.values()), default=0)
        if not most:
            raise ValueError(facts.no_encoder(self.model))
        number = integer(value)
        if number is None or not 1 <= number <= most:
            raise ValueError(f"encoder_tokens must be an int in [1, {most}], got {value!r}")
        return number

    def _build_host(self, host_cache_bytes: Quota | None) -> None:
        """The host tier of every manager: host rows for each paged attention pool (the
        engine's pool groups), split from the manager's host quota as the engine splits it."""
        if host_cache_bytes is None:
            return
        if self.block_reuse:
            raise ValueError(
                "host_cache_bytes with block_reuse is not modelled: the engine evicts the reuse "
                "cache and suspended requests' pages in one order; give one of them"
            )
        quotas = self._budgets(host_cache_bytes, "host_cache_bytes")
        host = torch.device("meta") if self.device.type == "meta" else torch.device("cpu")
        for name, manager in self.managers.items():
            if quotas[name] < 1:
                raise ValueError(f"host_cache_bytes must be positive, got {quotas[name]}")
            pools: dict[int, Pool] = {}
            groups = []
            for cycle in manager.cycles:
                index = self._paged_index.get((name, cycle.name))
                pool = manager.pools[cycle.name]
                if index is None or id(pool) in pools or self._paged[index].scratch is not None:
                    continue
                pools[id(pool)] = pool
                sizes = _slot_sizes(cycle, self.tokens_per_block) or (pool.page_bytes,)
                groups.append((sizes, len(pool.members)))
            if not groups:
                continue
            for pool, rows in zip(pools.values(), host_rows(quotas[name], groups), strict=True):
                pool.host_pages = rows
                pool.host = Pool(
                    name, pool.name + "/host", "host", rows, pool.page_bytes, host
                ).tensor

    def _budgets(self, quota_bytes: Quota | None, what: str = "quota_bytes") -> dict[str, int]:
        """Quota bytes per manager, checked before any pool is built."""
        if quota_bytes is None:
            return {}
        single = integer(quota_bytes)
        if single is not None:
            quotas: Mapping[str, object] = dict.fromkeys(self.managers, single)
        elif isinstance(quota_bytes, Mapping):
            if set(quota_bytes) != set(self.managers):
                raise ValueError(
                    f"{what} must give every manager ({', '.join(self.managers)}), "
                    f"got {sorted(map(str, quota_bytes))}"
                )
            quotas = quota_bytes
        else:
            raise ValueError(
                f"{what} must be an int or a mapping of manager to int, got {quota_bytes!r}"
            )
        return {name: _count(what, quotas[name], 0) for name in self.managers}

    def _overrides(
        self, pool_pages: Mapping[tuple[str, str], int] | None
    ) -> dict[tuple[str, str], int]:
        if pool_pages is None:
            return {}
        if not isinstance(pool_pages, Mapping):
            raise ValueError(f"pool_pages must map (manager, pool) to pages, got {pool_pages!r}")
        return {key: _count(f"pool_pages[{key!r}]", n, 0) for key, n in pool_pages.items()}

    def _layout(self) -> None:
        """Flatten the paged pools of every manager for the per-step bookkeeping."""
        self._paged = []
        self._states = []
        self._cross = []
        self._paged_index: dict[tuple[str, str], int] = {}  # (manager, life cycle) -> index
        for manager in self.managers.values():
            for cycle in manager.cycles:
                pool = manager.pools[cycle.name]
                if cycle.life.slots:
                    self._states.append(pool)
                    continue
                if not cycle.life.paged:  # taken at admission, held until the request leaves
                    pages = cycle.life.admission_pages(cycle, self.tokens_per_block)
                    self._cross.append((pool, pages))
                    continue
                sink_blocks = ceil_div(cycle.sink_tokens, self.tokens_per_block)
                scratch = manager.pools.get(cycle.name + "/scratch")
                self._paged_index[(manager.name, cycle.name)] = len(self._paged)
                self._paged.append(PagedPool(pool, cycle.window, sink_blocks, scratch, cycle.chunk))
        self._initial_stale = [paged.sink_blocks for paged in self._paged]
        self._requests = {}
        self._freed = set()
        self._live = 0
        self._capacity_tokens = 0
        self._context_tokens = 0
