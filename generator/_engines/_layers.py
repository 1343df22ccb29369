"""The cached layers of one model, as every engine model here reads them (stdlib only).

The physics is engine-independent (docs/cost-model.md §1): bytes per token of an attention
layer, the window of a sliding layer, the fixed state of a recurrent layer. What differs per
engine is how pools are laid out around it, which the engine modules add. Each layer's rows
(and what the engine models refuse of it) come from its cache kind's class
(``kvgen._cache_kinds``: :meth:`~kvgen._cache_kinds.CacheKind.engine_layers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvgen._cache_kinds import CachedLayer, spec_kind
from kvgen.engines_rows import NotModelled
from kvgen.facts import DTYPE_BYTES

if TYPE_CHECKING:
    from kvgen._spec import Family, LayerStack, Model

__all__ = ["DTYPE_BYTES", "CachedLayer", "NotModelled", "cached_layers", "stack_layers"]


def ssm_state_bytes(family: Family, model: Model) -> int:
    """The SSM part of one recurrent layer's state in the model dtype at tp=1 (SGLang keeps
    it in its own dtype, fp32 by default); 0 without a ``mamba:`` kind."""
    for kind in model.layer_kinds.values():
        dims = kind.recurrent_dims
        if (spec_kind(kind).recurrent or kind.parallel_state) and dims is not None:
            dtype = kind.dtype or model.kv_cache_dtype or family.kv_cache_dtype
            elements = dims.num_heads * dims.head_dim * dims.d_state
            return elements * DTYPE_BYTES[dtype]
    return 0


def cached_layers(family: Family, model: Model) -> tuple[CachedLayer, ...]:
    """The model's cached layers in layer order, with the pool dtype resolved."""
    return stack_layers(family, model, model)


def stack_layers(
    family: Family, stack: LayerStack, model: Model, *, shared: bool = False
) -> tuple[CachedLayer, ...]:
    """The cached layers of ``stack`` (the model, or a profile's draft layers, whose missing
    head_dim derives from ``model``), with the pool dtype resolved; ``shared``: a layer that
    reads another's cache counted as its kind's own (SGLang allocates it a buffer)."""
    pattern = stack.layers.pattern
    pool_dtype = stack.kv_cache_dtype or family.kv_cache_dtype
    out: list[CachedLayer] = []
    for index in range(stack.layers.count):
        kind = stack.layer_kinds[pattern[index % len(pattern)]]
        cls = spec_kind(kind)
        if kind.reads is not None and not shared:
            # KV sharing: the layer reads another layer's cache and holds none of its own
            # (vLLM skips a layer with kv_sharing_target_layer_name when it builds specs).
            continue
        out += cls.engine_layers(kind, index, kind.dtype or pool_dtype, model)
    return tuple(out)
