"""The shape rules of a spec layer kind that JSON Schema types cannot state, as one function
(``kvgen._spec.models.LayerKind`` raises its message): exactly one shape, the fields each shape
needs, and the attentions a field belongs to."""

from __future__ import annotations

from typing import Any

__all__ = ["shape_problem"]


def shape_problem(kind: Any) -> str | None:
    """What is wrong with the shape fields of ``kind`` (a ``kvgen._spec.models.LayerKind``, untyped
    here: spec imports this module), or None."""
    shapes = [
        name
        for name, present in (
            ("kv_heads", kind.kv_heads is not None),
            ("kv_lora_rank", kind.kv_lora_rank is not None),
            ("bytes_per_token", kind.bytes_per_token is not None),
            ("state_bytes", kind.state_bytes is not None),
            ("mamba", kind.mamba is not None),
            ("mamba1", kind.mamba1 is not None),
            ("linear", kind.linear is not None),
        )
        if present
    ]
    if shapes == ["kv_heads", "mamba"] and kind.attention == "full":
        shapes = ["kv_heads"]  # a parallel hybrid layer: K/V and a Mamba-2 state (Falcon-H1)
    if len(shapes) > 1:
        return (
            "give exactly one shape: kv_heads (+head_dim), kv_lora_rank (+qk_rope_head_dim), "
            f"bytes_per_token, state_bytes, mamba, mamba1 or linear; found {', '.join(shapes)} "
            "(only a full kind holds both kv_heads and mamba: a parallel hybrid layer)"
        )
    if kind.mamba is not None and kind.attention not in ("recurrent", "full"):
        return (
            "mamba (recurrent state dimensions) needs attention: recurrent, or full beside "
            "kv_heads (a parallel hybrid layer)"
        )
    if kind.mamba is not None and kind.attention == "full" and kind.kv_heads is None:
        return (
            "mamba on a full kind is a parallel hybrid layer and needs kv_heads (+head_dim) "
            "beside it; a layer with a state alone is attention: recurrent"
        )
    if kind.mamba1 is not None and kind.attention != "recurrent":
        return "mamba1 (Mamba-1 state dimensions) needs attention: recurrent"
    if kind.linear is not None and kind.attention != "recurrent":
        return "linear (linear-attention state dimensions) needs attention: recurrent"
    if kind.kv_lora_rank is not None and kind.qk_rope_head_dim is None:
        return "an MLA kind needs qk_rope_head_dim beside kv_lora_rank"
    if kind.qk_rope_head_dim is not None and kind.kv_lora_rank is None:
        return "qk_rope_head_dim is only meaningful with kv_lora_rank (MLA)"
    if kind.head_dim is not None and kind.kv_heads is None:
        return "head_dim needs kv_heads"
    if kind.v_head_dim is not None and kind.kv_heads is None:
        return "v_head_dim (a V head size of its own) needs kv_heads"
    if kind.index_head_dim is not None and kind.kv_lora_rank is None:
        return "index_head_dim (a sparse-attention index-K cache) needs an MLA kind"
    if kind.reads is not None and kind.attention not in ("full", "sliding"):
        return (
            "reads (KV sharing) needs attention: full or sliding, the attention the layer "
            "computes over the cache it reads"
        )
    if kind.attention == "chunked" and kind.chunk is None:
        return "a chunked kind needs chunk (tokens per attention chunk)"
    return None
