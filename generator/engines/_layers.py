"""The cached layers of one model, as every engine model here reads them (stdlib only).

The physics is engine-independent (docs/cost-model.md §1): bytes per token of an attention
layer, the window of a sliding layer, the fixed state of a recurrent layer. What differs per
engine is how pools are laid out around it, which the engine modules add.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kvgen.engines_core import UNMODELLED, NotModelled
from kvgen.facts import DTYPE_BYTES

if TYPE_CHECKING:
    from kvgen.spec import Family, LayerKind, LayerStack, Model

__all__ = ["DTYPE_BYTES", "CachedLayer", "NotModelled", "cached_layers", "stack_layers"]


class CachedLayer(NamedTuple):
    """One layer that holds cache; ``attention: none`` layers are left out."""

    position: int  # index in the model (pattern phase)
    attention: str  # "full", "sliding", "mla" or "recurrent"
    kv_heads: int  # 1 for MLA (one latent), 0 for recurrent
    head_dim: int  # K head size; MLA: kv_lora_rank + qk_rope_head_dim
    value_dim: int  # V head size; 0 for MLA (no separate V)
    window: int | None  # sliding layers only
    state_bytes: int  # recurrent layers only, at tp=1
    dtype: str
    # Recurrent layers with dimensions: (mixer, conv channels, conv rows, SSM heads, elements
    # per SSM head, B/C groups, d_state), mixer "mamba2" or "mamba1"; () for raw state_bytes.
    recurrent: tuple[object, ...] = ()
    token_bytes: int = 0  # a packed layout's bytes per token (fp8_ds_mla, an indexer key)


def _unmodelled(model: Model, reason: str) -> NotModelled:
    return NotModelled(f"{model.name}: {UNMODELLED[reason]}", reason)


def _head_dim(kind: LayerKind, model: Model) -> int:
    if kind.head_dim is not None:
        return kind.head_dim
    if model.hidden_size is None or model.num_attention_heads is None:
        raise ValueError(f"{model.name}: head_dim cannot be derived (no hidden_size/heads)")
    return model.hidden_size // model.num_attention_heads


def _state_bytes(kind: LayerKind, dtype: str) -> int:
    """One request's recurrent state at tp=1: the raw ``state_bytes``, or the conv and SSM
    buffers of a ``mamba:`` kind in their own dtypes (docs/cost-model.md §8)."""
    dims = kind.recurrent_dims
    if dims is None:
        return kind.state_bytes or 0
    from kvgen.recurrent import recurrent_state

    state = recurrent_state(dims, dtype, 1)
    return state.conv + state.ssm


def _recurrent_dims(kind: LayerKind) -> tuple[object, ...]:
    dims = kind.recurrent_dims
    if dims is None:
        return ()
    mixer = "mamba1" if kind.mamba1 is not None else "mamba2"
    return (mixer, dims.conv_dim, dims.d_conv - 1, dims.num_heads, dims.head_dim * dims.d_state,
            dims.n_groups, dims.d_state)  # fmt: skip


def ssm_state_bytes(family: Family, model: Model) -> int:
    """The SSM part of one recurrent layer's state in the model dtype at tp=1 (SGLang keeps
    it in its own dtype, fp32 by default); 0 without a ``mamba:`` kind."""
    for kind in model.layer_kinds.values():
        dims = kind.recurrent_dims
        if (kind.attention == "recurrent" or kind.parallel_state) and dims is not None:
            dtype = kind.dtype or model.kv_cache_dtype or family.kv_cache_dtype
            elements = dims.num_heads * dims.head_dim * dims.d_state
            return elements * DTYPE_BYTES[dtype]
    return 0


def cached_layers(family: Family, model: Model) -> tuple[CachedLayer, ...]:
    """The model's cached layers in layer order, with the pool dtype resolved."""
    return stack_layers(family, model, model)


def stack_layers(family: Family, stack: LayerStack, model: Model) -> tuple[CachedLayer, ...]:
    """The cached layers of ``stack`` (the model, or a profile's draft layers, whose missing
    head_dim derives from ``model``), with the pool dtype resolved."""
    pattern = stack.layers.pattern
    pool_dtype = stack.kv_cache_dtype or family.kv_cache_dtype
    out = []
    for index in range(stack.layers.count):
        kind = stack.layer_kinds[pattern[index % len(pattern)]]
        dtype = kind.dtype or pool_dtype
        if kind.attention == "none":
            continue
        if kind.reads is not None:
            # KV sharing: the layer reads another layer's cache and holds none of its own
            # (vLLM skips a layer with kv_sharing_target_layer_name when it builds specs).
            continue
        if kind.attention == "cross":
            raise _unmodelled(model, "cross")  # the engines' own encoder-cache pools
        if kind.attention == "recurrent":
            out.append(_state_layer(index, kind, dtype))
            continue
        if dtype not in DTYPE_BYTES and not (dtype == "fp8_ds_mla" and kind.kv_lora_rank):
            raise _unmodelled(model, "dtype")
        if kind.bytes_per_token is not None or kind.extra_bytes_per_token:
            raise _unmodelled(model, "synthetic")
        if kind.sink_tokens:
            raise _unmodelled(model, "sinks")
        if kind.kv_lora_rank is not None and kind.attention in ("sliding", "chunked"):
            raise _unmodelled(model, "sliding_mla")
        if kind.attention == "chunked":
            # vLLM: ChunkedLocalAttentionSpec; SGLang sizes it as a sliding window of the chunk.
            head = _head_dim(kind, model)
            out.append(CachedLayer(index, "chunked", kind.kv_heads or 0, head,
                                   kind.v_head_dim or head, kind.chunk, 0, dtype))  # fmt: skip
            continue
        if kind.kv_lora_rank is not None:
            from kvgen.quant import ds_mla_bytes, index_k_bytes

            rope = kind.qk_rope_head_dim or 0
            packed = ds_mla_bytes(kind.kv_lora_rank, rope) if dtype == "fp8_ds_mla" else 0
            latent = kind.kv_lora_rank + rope
            out.append(CachedLayer(index, "mla", 1, latent, 0, None, 0, dtype, (), packed))
            if kind.index_head_dim is not None:
                # The sparse indexer's key cache (vLLM DeepseekV32IndexerCache): its own layer
                # of the same full-attention kind, fp8 with a scale per 128 elements.
                key = index_k_bytes(kind.index_head_dim)
                out.append(CachedLayer(index, "mla", 1, kind.index_head_dim, 0, None, 0, "fp8",
                                       (), key))  # fmt: skip
            continue
        if kind.index_head_dim is not None:
            raise _unmodelled(model, "index_cache")
        head = _head_dim(kind, model)
        value = kind.v_head_dim or head  # vLLM head_size_v, SGLang v_head_dim
        window = kind.window if kind.attention == "sliding" else None
        attention = "sliding" if window is not None else "full"
        out.append(CachedLayer(index, attention, kind.kv_heads or 0, head, value, window, 0, dtype))
        if kind.parallel_state:
            # A parallel hybrid layer (Falcon-H1) is two cache layers to both engines: vLLM's
            # FalconH1ParallelHybrid builds an Attention, then a MambaMixer2 (at index L + i);
            # SGLang lists every layer in full_attention_layer_ids and in linear_layer_ids.
            out.append(_state_layer(index, kind, dtype))
    return tuple(out)


def _state_layer(index: int, kind: LayerKind, dtype: str) -> CachedLayer:
    """A recurrent layer's state as both engines allocate it (one slot per request)."""
    return CachedLayer(
        index, "recurrent", 0, 0, 0, None, _state_bytes(kind, dtype), dtype, _recurrent_dims(kind)
    )
