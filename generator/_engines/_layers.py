"""The cached layers of one model, layer by layer, as every engine model here reads them (stdlib
only).

The physics is engine-independent (docs/cost-model.md §1): bytes per token of an attention
layer, the window of a sliding layer, the fixed state of a recurrent layer. What differs per
engine is how pools are laid out around it, which the engine modules add. Each layer's rows
(and what the engine models refuse of it) are its kind's, as the runtime derives them from the
interpreter's row of the kind (``kvgen.sizing.engines_rows.kind_rows``;
``kvgen._model.sizing_rows``), so a generated module and kvgen read the same rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kvgen._model.sizing_rows import stack_row
from kvgen.sizing.engines_rows import NotModelled, kind_rows
from kvgen.sizing.engines_rows import ssm_state_bytes as stack_ssm_state_bytes
from kvgen.sizing.facts import DTYPE_BYTES

if TYPE_CHECKING:
    from kvgen._spec.models import Family, LayerStack, Model

__all__ = [
    "DTYPE_BYTES",
    "CachedLayer",
    "NotModelled",
    "cached_layers",
    "ssm_state_bytes",
    "stack_layers",
]


class CachedLayer(NamedTuple):
    """One layer that holds cache, as every engine model reads it (``attention: none``
    layers and KV-sharing readers are left out)."""

    position: int  # index in the model (pattern phase)
    attention: str  # "full", "sliding", "chunked", "mla" or "recurrent"
    kv_heads: int  # 1 for MLA (one latent), 0 for recurrent
    head_dim: int  # K head size; MLA: kv_lora_rank + qk_rope_head_dim
    value_dim: int  # V head size; 0 for MLA (no separate V)
    window: int | None  # sliding layers only (chunked: the chunk)
    state_bytes: int  # recurrent layers only, at tp=1
    dtype: str
    # Recurrent layers with dimensions: (mixer, conv channels, conv rows, SSM heads, elements
    # per SSM head, B/C groups, d_state), mixer "mamba2", "mamba1" or "linear"; () for raw
    # state_bytes.
    recurrent: tuple[object, ...] = ()
    token_bytes: int = 0  # a packed layout's bytes per token (fp8_ds_mla, an indexer key)


def ssm_state_bytes(family: Family, model: Model) -> int:
    """The SSM part of one recurrent layer's state in the model dtype at tp=1 (SGLang keeps
    it in its own dtype, fp32 by default); 0 without a ``mamba:`` kind."""
    return stack_ssm_state_bytes(stack_row(model, family.kv_cache_dtype, model))


def cached_layers(family: Family, model: Model) -> tuple[CachedLayer, ...]:
    """The model's cached layers in layer order, with the pool dtype resolved."""
    return stack_layers(family, model, model)


def stack_layers(
    family: Family, stack: LayerStack, model: Model, *, shared: bool = False
) -> tuple[CachedLayer, ...]:
    """The cached layers of ``stack`` (the model, or a profile's draft layers, whose missing
    head_dim derives from ``model``), with the pool dtype resolved; ``shared``: a layer that
    reads another's cache counted as its kind's own (SGLang allocates it a buffer).
    ``NotModelled`` for the first layer no engine model holds."""
    row = stack_row(stack, family.kv_cache_dtype, model)
    out: list[CachedLayer] = []
    for index in range(row.layer_count):
        kind = row.kinds[row.pattern[index % len(row.pattern)]]
        if kind.reads is not None and not shared:
            # KV sharing: the layer reads another layer's cache and holds none of its own
            # (vLLM skips a layer with kv_sharing_target_layer_name when it builds specs).
            continue
        out += (CachedLayer(index, *layer) for layer in kind_rows(kind, model.name))
    return tuple(out)
