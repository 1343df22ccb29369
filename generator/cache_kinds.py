"""The cache kinds of a spec as values: one class per kind, chosen from a kind -> class map.

Generation reads a layer kind's fields through its class instead of branching on
``kind.attention``: the sizing rows (``sizing_context.kind_row``) and the allocator's layer
kinds (``allocator_context.layer_kind_fields``) ask the same class what the kind keeps (heads,
a window and its sinks, a chunk, encoder tokens). The interpreter's own classes (in
``sizing_core``: rows, bytes per token at a tp, pages under a headroom) answer the static cost
from those rows; the runtime derives its own from the allocator's tables. A shared reader
(``reads``) keeps the class of its attention here: it is a full or sliding kind whose cache is
another layer's, which both tables carry as ``reads``.
"""

from __future__ import annotations

from typing import Any

from kvgen.spec import LayerKind

__all__ = ["SPEC_KINDS", "CacheKind", "spec_kind"]


class CacheKind:
    """Full attention, the base: K/V heads of every token of history, no window or chunk."""

    cached_heads = True  # K/V heads (or an MLA latent) per token

    @staticmethod
    def window(kind: LayerKind) -> int | None:
        return None

    @staticmethod
    def sink_tokens(kind: LayerKind) -> int:
        return 0

    @staticmethod
    def chunk(kind: LayerKind) -> int:
        return 0

    @staticmethod
    def encoder_fields(kind: LayerKind) -> dict[str, Any]:
        return {}


class Sliding(CacheKind):
    """Sliding-window attention: the last ``window`` tokens, ``sink_tokens`` kept besides."""

    @staticmethod
    def window(kind: LayerKind) -> int | None:
        return kind.window

    @staticmethod
    def sink_tokens(kind: LayerKind) -> int:
        return kind.sink_tokens


class Chunked(CacheKind):
    """Chunked attention: the tokens of the current chunk of ``chunk``."""

    @staticmethod
    def chunk(kind: LayerKind) -> int:
        return kind.chunk or 0


class Cross(CacheKind):
    """Cross-attention: the K/V of ``encoder_tokens`` encoder tokens per request."""

    @staticmethod
    def encoder_fields(kind: LayerKind) -> dict[str, Any]:
        return {"encoder_tokens": kind.encoder_tokens or 0}


class Recurrent(CacheKind):
    """A recurrent state per request (Mamba, linear attention): no heads per token."""

    cached_heads = False


class CacheLess(CacheKind):
    """A layer without a cache (attention "none"): it only takes its index."""

    cached_heads = False


SPEC_KINDS: dict[str, type[CacheKind]] = {
    "full": CacheKind,
    "sliding": Sliding,
    "chunked": Chunked,
    "cross": Cross,
    "recurrent": Recurrent,
    "none": CacheLess,
}


def spec_kind(kind: LayerKind) -> type[CacheKind]:
    """The class of ``kind``'s attention."""
    return SPEC_KINDS[kind.attention]
