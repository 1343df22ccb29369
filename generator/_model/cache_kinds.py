"""The cache kinds of a spec as values: one class per kind, chosen from a kind -> class map.

Generation reads a layer kind's fields through its class instead of branching on
``kind.attention``: the sizing rows (``kvgen._model.sizing_rows.kind_row``) and the allocator's
layer kinds (``allocator_context.layer_kind_fields``) ask the same class what the kind keeps (heads,
a window and its sinks, a chunk, encoder tokens). The interpreter's own classes (in
``kvgen.sizing.sizing_kinds``: rows, bytes per token at a tp, pages under a headroom) answer the
static cost from those rows, and the engine rows with what the engine models refuse of a kind
(``kvgen.sizing.engines_rows.kind_rows``); the runtime derives its own from the allocator's tables
(``kvgen.runtime._kinds``). A shared reader (``reads``) keeps the class of its attention here:
it is a full or sliding kind whose cache is another layer's, which both tables carry as
``reads`` and the engine rows leave out.
"""

from __future__ import annotations

from typing import Any

from kvgen._spec.models import LayerKind

__all__ = ["SPEC_KINDS", "CacheKind", "spec_kind"]


class CacheKind:
    """Full attention, the base: K/V heads of every token of history, no window or chunk."""

    cached_heads = True  # K/V heads (or an MLA latent) per token
    recurrent = False  # a state per request instead (its SSM share: ``ssm_state_bytes``)
    encoder_cache = False  # the K/V of encoder tokens, in the engines' own encoder managers

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


class SlidingKind(CacheKind):
    """Sliding-window attention: the last ``window`` tokens, ``sink_tokens`` kept besides."""

    @staticmethod
    def window(kind: LayerKind) -> int | None:
        return kind.window

    @staticmethod
    def sink_tokens(kind: LayerKind) -> int:
        return kind.sink_tokens


class ChunkedKind(CacheKind):
    """Chunked attention: the tokens of the current chunk of ``chunk``."""

    @staticmethod
    def chunk(kind: LayerKind) -> int:
        return kind.chunk or 0


class CrossKind(CacheKind):
    """Cross-attention: the K/V of ``encoder_tokens`` encoder tokens per request."""

    encoder_cache = True

    @staticmethod
    def encoder_fields(kind: LayerKind) -> dict[str, Any]:
        return {"encoder_tokens": kind.encoder_tokens or 0}


class RecurrentKind(CacheKind):
    """A recurrent state per request (Mamba, linear attention): no heads per token."""

    cached_heads = False
    recurrent = True


class LinearAttentionKind(RecurrentKind):
    """Linear (lightning) attention: one ``head_dim x head_dim`` matrix per head per request,
    no conv window (``linear:``). Its sizing and allocator fields are its Mamba-2 lowering
    (``LinearState.as_mamba2``); the engines read it as their own linear-attention state:
    vLLM's MambaStateShapeCalculator.linear_attention_state_shape (heads/tp, head_dim,
    head_dim) in mamba_cache_dtype (never the SSM dtype), SGLang's Mamba2StateShape with no
    conv channels and state_size head_dim in its SSM dtype."""


class CacheLessKind(CacheKind):
    """A layer without a cache (attention "none"): it only takes its index."""

    cached_heads = False


SPEC_KINDS: dict[str, type[CacheKind]] = {
    "full": CacheKind,
    "sliding": SlidingKind,
    "chunked": ChunkedKind,
    "cross": CrossKind,
    "recurrent": RecurrentKind,
    "none": CacheLessKind,
}


def spec_kind(kind: LayerKind) -> type[CacheKind]:
    """The class of ``kind``'s attention (a recurrent kind's by its state's form)."""
    if kind.linear is not None:
        return LinearAttentionKind
    return SPEC_KINDS[kind.attention]
