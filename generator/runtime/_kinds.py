"""Cache kinds in the shim runtime as values: one class per spec attention, one per life cycle,
and the records they read (a layer kind, a resolved layer, a life cycle's layers, the planner).

A layer kind's attention (``LayerKind.attention``) names a :class:`LayerRule`
(``LAYER_RULES``): how a layer of that kind resolves on one rank (its window or chunk, its
state, its encoder tokens) and which :class:`LifeCycle` classes it joins. A life cycle
(``Cycle.life``) answers what pages and bytes its pools get for T tokens, how a request's pages
come (grown with its capacity step by step, taken at admission, or one slot) and what may
share them. Nothing in the runtime branches on a kind's name: a new kind is one rule here
(with its entry in ``LAYER_RULES``) and, when its pages live differently, one life cycle.

The records live here, beside the classes that read them, so that each is defined once:
``LayerKind`` (re-exported by ``kvgen.runtime._tables``), ``Layer`` and ``Cycle`` (built by
``kvgen.runtime._layers``) and ``PagePlanner`` (what decides pool sizes, asked by the shim).

These are the runtime's own derivations (docs/cost-model.md §3, §4, §8), written apart from
the static classes of ``kvgen._model.cache_kinds`` and ``kvgen.sizing.sizing_core``: the diff suite
compares the two sides. Only facts are shared (``kvgen.sizing.facts``). No torch here (a
buffer's dtype is named for the type checker only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from kvgen.runtime._errors import QuotaTooSmallError
from kvgen.runtime._pages import ceil_div, peak_chunk_pages, peak_live_pages
from kvgen.sizing.facts import DCP_ATTENTION

if TYPE_CHECKING:
    import torch

__all__ = [
    "LAYER_RULES",
    "LIFE_CYCLES",
    "SCRATCH",
    "Buffer",
    "Chunked",
    "Cross",
    "Cycle",
    "Full",
    "Layer",
    "LayerKind",
    "LayerRule",
    "LifeCycle",
    "PagePlanner",
    "Sliding",
    "State",
    "layer_rule",
]

SCRATCH = "/scratch"  # suffix of a sliding life cycle's scratch pool (targets, scratch reuse)


# --------------------------------------------------------------------------- layer kinds


class LayerKind(NamedTuple):
    """One kind of layer as the spec gives it (absent shapes are 0; dtype resolved)."""

    attention: str  # "full", "sliding", "recurrent", "none" (no cache), "cross" or "chunked"
    window: int | None = None
    sink_tokens: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    bytes_per_token: int = 0
    extra_bytes_per_token: int = 0
    state_bytes: int = 0
    dtype: str = "bf16"
    # Recurrent state by dimensions (docs/cost-model.md §8); ssm_heads 0: raw state_bytes.
    ssm_heads: int = 0
    ssm_head_dim: int = 0
    d_state: int = 0
    n_groups: int = 0
    d_conv: int = 0
    ssm_dtype: str = ""
    # MLA only: a sparse-attention indexer's key cache (fp8 + an fp32 scale per 128), per token.
    index_head_dim: int = 0
    # KV sharing: the index of the earlier layer (same stack, same shape) whose cache the
    # layers of this kind read; they get no pages of their own (docs/cost-model.md §1).
    reads: int | None = None
    encoder_tokens: int = 0  # cross-attention: encoder tokens cached per request (§4)
    chunk: int = 0  # chunked local attention: tokens per attention chunk (§3)
    v_head_dim: int = 0  # V's head size where it differs from K's head_dim (0: the same)


# --------------------------------------------------------------------------- life cycles


class LifeCycle:
    """Pages that live and die together; the base answers for none (every class overrides)."""

    label: ClassVar[str]  # ``Cycle.kind`` and ``Pool.kind``, as the shim reports them
    order: ClassVar[int]  # life cycles of a manager: full, windowed, state, cross
    paged: ClassVar[bool] = True  # pages follow each request's capacity, step by step
    windowed: ClassVar[bool] = False  # pages behind the window (or chunk) go stale
    grows: ClassVar[bool] = False  # its pages grow with T (a quota search may double T)
    pool_group: ClassVar[bool] = False  # may share an engine pool group of equal slot sizes
    scratch: ClassVar[bool] = False  # a chunk's transient pages may go to a scratch pool
    slots: ClassVar[bool] = False  # one slot per request (recurrent state), not pages

    @staticmethod
    def key(layer: Layer) -> tuple[int, int, int]:
        """(window, sink tokens, chunk) that split this life cycle's layers into cycles."""
        return (0, 0, 0)

    @classmethod
    def name(cls, key: tuple[int, int, int]) -> str:
        return cls.label

    @staticmethod
    def pages(
        planner: PagePlanner, cycle: Cycle, tokens: int, context: int, scratch: bool
    ) -> dict[str, int]:
        """Pages of this life cycle's pools for T = ``tokens``: ``{pool name: pages}``."""
        raise NotImplementedError

    @staticmethod
    def pool_bytes(cycle: Cycle, pages: int, tokens_per_block: int) -> int:
        """Bytes of ``pages`` pages of the life cycle's own pool."""
        return pages * tokens_per_block * cycle.token_bytes

    @staticmethod
    def admission_pages(cycle: Cycle, tokens_per_block: int) -> int:
        """Pages a request takes at admission and holds until it leaves (0: none)."""
        return 0


class Full(LifeCycle):
    """Full attention: every token of history, T tokens in whole pages."""

    label, order = "full", 0
    grows = pool_group = True

    @staticmethod
    def pages(
        planner: PagePlanner, cycle: Cycle, tokens: int, context: int, scratch: bool
    ) -> dict[str, int]:
        # Whole pages per request: under "exact" room for span-1 more tokens each.
        span = planner.tokens_per_block * planner.dcp_size  # a page on each DCP rank (§9)
        padding = planner.max_batch_size * (span - 1) if planner.exact else 0
        return {cycle.name: ceil_div(tokens + padding, span)}


class Sliding(LifeCycle):
    """A sliding window (w + D, sinks kept): B requests' peak pages plus one context chunk's."""

    label, order = "swa", 1
    windowed = pool_group = scratch = True

    @staticmethod
    def key(layer: Layer) -> tuple[int, int, int]:
        assert layer.window is not None
        return (layer.window, layer.sink_tokens, layer.chunk)

    @classmethod
    def name(cls, key: tuple[int, int, int]) -> str:
        window, sinks, _chunk = key
        return f"w{window}s{sinks}" if sinks else f"w{window}"

    @staticmethod
    def peak(cycle: Cycle, head: int, tokens_per_block: int) -> int:
        """Peak pages of one request with capacity ``head`` tokens ahead of its history."""
        assert cycle.window is not None
        return peak_live_pages(cycle.window, head, cycle.sink_tokens, tokens_per_block)

    @classmethod
    def pages(
        cls, planner: PagePlanner, cycle: Cycle, tokens: int, context: int, scratch: bool
    ) -> dict[str, int]:
        tpb, batch = planner.tokens_per_block, planner.max_batch_size
        peak = cls.peak(cycle, planner.headroom, tpb)
        rounding = 0
        if planner.exact:
            before = cls.peak(cycle, planner.extra_tokens, tpb)
            if peak == before:  # no spare page: a chunk may round up one page more
                rounding = min(batch, planner.max_num_tokens) * (tpb - 1)
        context_pages = ceil_div(context + rounding, tpb)
        if scratch and cls.scratch:
            return {cycle.name: batch * peak, cycle.name + SCRATCH: context_pages}
        return {cycle.name: batch * peak + context_pages}


class Chunked(Sliding):
    """Chunked local attention: pages go stale chunk by chunk. No scratch pages (a chunk
    boundary makes a whole chunk of pages stale at once, more than one context chunk's
    worth) and no shared pool group (the engine keeps it apart)."""

    pool_group = scratch = False

    @classmethod
    def name(cls, key: tuple[int, int, int]) -> str:
        return f"c{key[2]}"

    @staticmethod
    def peak(cycle: Cycle, head: int, tokens_per_block: int) -> int:
        return peak_chunk_pages(cycle.chunk, head, tokens_per_block)


class State(LifeCycle):
    """Recurrent state: one slot per request, taken at admission, whatever its history."""

    label, order = "state", 2
    paged = False
    slots = True

    @staticmethod
    def pages(
        planner: PagePlanner, cycle: Cycle, tokens: int, context: int, scratch: bool
    ) -> dict[str, int]:
        return {cycle.name: planner.max_batch_size}

    @staticmethod
    def pool_bytes(cycle: Cycle, pages: int, tokens_per_block: int) -> int:
        return pages * cycle.state_bytes


class Cross(LifeCycle):
    """Cross-attention: each request's encoder tokens in whole pages, taken at admission and
    held until it leaves, never grown by history (§4)."""

    label, order = "cross", 3
    paged = False

    @staticmethod
    def pages(
        planner: PagePlanner, cycle: Cycle, tokens: int, context: int, scratch: bool
    ) -> dict[str, int]:
        # Every request's encoder tokens in whole pages, never more, never fewer.
        tpb = planner.tokens_per_block
        return {cycle.name: planner.max_batch_size * ceil_div(cycle.encoder_tokens, tpb)}

    @staticmethod
    def admission_pages(cycle: Cycle, tokens_per_block: int) -> int:
        return ceil_div(cycle.encoder_tokens, tokens_per_block)


LIFE_CYCLES: tuple[type[LifeCycle], ...] = (Full, Sliding, Chunked, State, Cross)


# --------------------------------------------------------------------------- records


# A typed per-token buffer of a layer: (view name, element dtype, shape per token).
Buffer = tuple[str, "torch.dtype", tuple[int, ...]]


class Layer(NamedTuple):
    """One layer as its cache manager holds it on this rank."""

    name: str  # "layers.<i>", "extra_layers.<i>" or "draft.<i>"
    kind: str
    window: int | None  # resolved: None is full attention (or a recurrent layer)
    sink_tokens: int
    buffers: tuple[Buffer, ...]  # per token
    bytes_per_token: int  # sum of the buffers
    state_bytes: int  # recurrent: bytes per request on this rank
    # Recurrent by dimensions (§8), per slot on this rank: conv window, SSM state, and one
    # replay history step (x and B in the cache dtype, dt and dA_cumsum in fp32).
    mamba: tuple[int, int, int] = (0, 0, 0)
    encoder_tokens: int = 0  # cross-attention: encoder tokens held per request (§4)
    chunk: int = 0  # chunked local attention: the chunk (``window`` holds it too)
    lives: tuple[type[LifeCycle], ...] = (Full,)  # the life cycles its layer rule puts it in


class Cycle(NamedTuple):
    """A life cycle of one manager: the layers whose pages live and die together."""

    name: str  # "full", "w<window>", "w<window>s<sinks>", "c<chunk>", "state", "cross"
    life: type[LifeCycle]  # what its pools get and how requests take their pages
    window: int | None
    sink_tokens: int
    layers: tuple[Layer, ...]
    encoder_tokens: int = 0  # cross: encoder tokens each request holds from admission
    chunk: int = 0  # chunked local attention: pages stale by chunk, not by window

    @property
    def kind(self) -> str:
        """The life cycle's label: "full", "swa" (chunked too: its pages go stale), "state" or
        "cross"."""
        return self.life.label

    @property
    def token_bytes(self) -> int:
        return sum(layer.bytes_per_token for layer in self.layers)

    @property
    def state_bytes(self) -> int:
        return sum(layer.state_bytes for layer in self.layers)

    @property
    def scratch_layers(self) -> tuple[Layer, ...]:
        """One layer per distinct bytes-per-token: the layers that scratch pages serve."""
        seen: dict[int, Layer] = {}
        for layer in self.layers:
            seen.setdefault(layer.bytes_per_token, layer)
        return tuple(seen.values())


class PagePlanner(NamedTuple):
    """The runtime parameters that decide pool sizes: how many pages each pool gets for T
    tokens and the largest T a quota holds (§3, §6, §7), each life cycle answering for its
    pools (the shim's own derivation from its page model, never the static cost model's)."""

    tokens_per_block: int
    max_batch_size: int
    max_num_tokens: int
    exact: bool  # semantics "exact": whole pages per request, chunk rounding
    scratch_reuse: bool
    headroom: int  # H: capacity - history at a step's peak
    extra_tokens: int  # E: capacity - history between forwards
    util32: float  # max_util_for_resume as a float32
    dcp_size: int = 1  # decode context parallelism: a full page spans tpb * dcp_size tokens

    def pages(self, manager: str, cycles: Sequence[Cycle], tokens: int) -> dict[str, int]:
        """Pages of every pool of the cache manager ``manager`` (its life cycles ``cycles``)
        for T = ``tokens``: each life cycle's answer."""
        scratch = self.scratch_reuse and manager == "target"
        # A draft whose pages are one windowed pool is rounded up for the resume watermark.
        rounded = manager == "draft" and len(cycles) == 1 and cycles[0].life.windowed
        context = self.max_num_tokens if rounded else min(tokens, self.max_num_tokens)
        pages = {}
        for cycle in cycles:
            pages.update(cycle.life.pages(self, cycle, tokens, context, scratch))
            if rounded:
                pages[cycle.name] = math.ceil(pages[cycle.name] / self.util32)
        return pages

    def bytes(self, manager: str, cycles: Sequence[Cycle], tokens: int) -> int:
        """Bytes of the pools of the cache manager ``manager`` for T = ``tokens``."""
        tpb = self.tokens_per_block
        by_name = {cycle.name: cycle for cycle in cycles}
        total = 0
        for name, pages in self.pages(manager, cycles, tokens).items():
            if name.endswith(SCRATCH):
                cycle = by_name[name.removesuffix(SCRATCH)]
                total += pages * tpb * sum(lay.bytes_per_token for lay in cycle.scratch_layers)
            else:
                total += by_name[name].life.pool_bytes(by_name[name], pages, tpb)
        return total

    def largest_tokens(self, manager: str, cycles: Sequence[Cycle], budget: int) -> int | None:
        """The largest T whose pools fit ``budget`` bytes; None when the pools stop growing."""
        smallest = self.bytes(manager, cycles, 0)
        if smallest > budget:
            raise QuotaTooSmallError(
                f"{manager}: quota_bytes {budget} cannot hold the pools of zero tokens "
                f"({smallest} bytes)"
            )
        grows = any(c.life.grows for c in cycles)
        if not grows and self.bytes(manager, cycles, self.max_num_tokens) <= budget:
            return None
        low, high = 0, max(self.max_num_tokens, 1)
        while grows and self.bytes(manager, cycles, high) <= budget:
            low, high = high, high * 2
        while high - low > 1:  # plan bytes never shrink as T grows
            mid = (low + high) // 2
            if self.bytes(manager, cycles, mid) <= budget:
                low = mid
            else:
                high = mid
        return low


# --------------------------------------------------------------------------- layer rules


class LayerRule:
    """Full attention, the base: a cache of K/V (or an MLA latent) per token of history."""

    attention: ClassVar[str] = "full"
    holds_cache: ClassVar[bool] = True  # False: the layer keeps its index and nothing else
    # A state per request (its bytes from the spec or its dimensions) instead of typed buffers
    # per token (K/V, an MLA latent, raw bytes).
    recurrent_state: ClassVar[bool] = False
    readable: ClassVar[bool] = True  # a KV-sharing reader may read a layer of this kind

    @classmethod
    def dcp_allowed(cls) -> bool:
        """Whether the engines run this attention under decode context parallelism (a fact)."""
        return cls.attention in DCP_ATTENTION

    @staticmethod
    def window(kind: LayerKind, max_seq_len: int, backoff: int) -> tuple[int | None, int]:
        """(window, chunk) of a layer on this rank; (None, 0): every token is kept."""
        return None, 0

    @staticmethod
    def encoder_tokens(kind: LayerKind, given: int | None) -> int:
        """Encoder tokens a request holds (``given``, the shim's ``encoder_tokens=``, replaces
        the spec's count)."""
        return 0

    @staticmethod
    def lives(layer: Layer) -> tuple[type[LifeCycle], ...]:
        """The life cycles a resolved layer joins: one, or two for a layer that keeps both
        tokens and a state (a parallel hybrid layer, Falcon-H1), each life cycle summing its
        own share of the layer (``token_bytes``, ``state_bytes``)."""
        return (Full, State) if layer.state_bytes else (Full,)


class SlidingRule(LayerRule):
    """Sliding-window attention: retention window w + D; one reaching max_seq_len is full."""

    attention = "sliding"

    @staticmethod
    def window(kind: LayerKind, max_seq_len: int, backoff: int) -> tuple[int | None, int]:
        if kind.window is None:
            return None, 0
        extended = kind.window + backoff
        return (extended if extended < max_seq_len else None), 0

    @staticmethod
    def lives(layer: Layer) -> tuple[type[LifeCycle], ...]:
        return (Full if layer.window is None else Sliding,)


class ChunkedRule(LayerRule):
    """Chunked local attention: pages of earlier chunks go stale; a chunk reaching
    max_seq_len never does (full attention). ``window`` holds the chunk too."""

    attention = "chunked"
    readable = False

    @staticmethod
    def window(kind: LayerKind, max_seq_len: int, backoff: int) -> tuple[int | None, int]:
        if kind.chunk < max_seq_len:
            return kind.chunk, kind.chunk
        return None, 0

    @staticmethod
    def lives(layer: Layer) -> tuple[type[LifeCycle], ...]:
        return (Chunked if layer.chunk else Full,)


class CrossRule(LayerRule):
    """Cross-attention: the K/V of a request's encoder tokens."""

    attention = "cross"
    readable = False

    @staticmethod
    def encoder_tokens(kind: LayerKind, given: int | None) -> int:
        return given or kind.encoder_tokens

    @staticmethod
    def lives(layer: Layer) -> tuple[type[LifeCycle], ...]:
        # No encoder tokens: nothing is held at admission (its zero pages page like full).
        return (Cross if layer.encoder_tokens else Full,)


class RecurrentRule(LayerRule):
    """A recurrent state per request (Mamba, linear attention): no buffers per token."""

    attention = "recurrent"
    recurrent_state = True
    readable = False

    @staticmethod
    def lives(layer: Layer) -> tuple[type[LifeCycle], ...]:
        return (State if layer.state_bytes else Full,)


class CacheLessRule(LayerRule):
    """A layer without a cache (attention "none"): it keeps its index only."""

    attention = "none"
    holds_cache = readable = False


LAYER_RULES: dict[str, type[LayerRule]] = {
    rule.attention: rule
    for rule in (LayerRule, SlidingRule, ChunkedRule, CrossRule, RecurrentRule, CacheLessRule)
}


def layer_rule(kind: LayerKind) -> type[LayerRule]:
    """The rule of ``kind``'s attention."""
    return LAYER_RULES[kind.attention]
