"""A layer kind's geometry as the spec states it (docs/cost-model.md §1): the head dim (given,
or derived from the model's hidden size), and the bytes per token of an MLA latent.

Read by both table builders (``kvgen._generate.sizing_context``,
``kvgen._generate.allocator_context``): the spec facts a generated table row holds, not a cost
formula.
"""

from __future__ import annotations

from kvgen._model.quant import ds_mla_bytes, index_k_bytes, layout_bytes
from kvgen._spec.models import LayerKind, LayerStack

__all__ = ["kind_head_dim", "kind_v_head_dim", "mla_bytes"]


def mla_bytes(kind: LayerKind, dtype: str) -> int:
    """One MLA layer per token: the latent (never split by tensor parallelism) in ``dtype``,
    or FlashMLA's fp8_ds_mla layout, plus a sparse-attention index-K cache if any (§1)."""
    rank, rope = kind.kv_lora_rank or 0, kind.qk_rope_head_dim or 0
    if dtype == "fp8_ds_mla":
        latent = ds_mla_bytes(rank, rope)
    else:
        latent = layout_bytes(dtype, 1, rank + rope)
    index = index_k_bytes(kind.index_head_dim) if kind.index_head_dim is not None else 0
    return latent + index


def kind_head_dim(kind: LayerKind, model: LayerStack) -> int:
    if kind.head_dim is not None:
        return kind.head_dim
    hidden: int | None = getattr(model, "hidden_size", None)
    heads: int | None = getattr(model, "num_attention_heads", None)
    if hidden is None or heads is None or hidden % heads:
        raise ValueError("head_dim is missing and cannot be derived from hidden_size / heads")
    return hidden // heads


def kind_v_head_dim(kind: LayerKind, model: LayerStack) -> int:
    """V's head size: ``v_head_dim`` where the spec gives one, else K's (§1)."""
    return kind.v_head_dim if kind.v_head_dim is not None else kind_head_dim(kind, model)
