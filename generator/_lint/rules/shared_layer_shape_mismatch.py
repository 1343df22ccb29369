"""A kind that reads (KV sharing) a layer whose cache has another shape.

## What it does
Reports a kind whose `reads` names a layer of another attention type, window, sink tokens,
KV heads, head dimension (given or derived), MLA shape (with its indexer's `index_head_dim`),
raw bytes per token, extra bytes per token or cache dtype.

## Why it matters
A reading layer attends over the other layer's pages as they are: its kernel needs the same
heads, head dimension and dtype, and its mask the same window (a sliding reader of a full
layer would see tokens that a sliding owner has already freed, and the other way round).
The cost charges the reader nothing (docs/cost-model.md §1) on the promise that the owner's
cache serves it unchanged; a shape mismatch breaks that promise (vLLM requires the reader
and its target to share one KV cache spec).

## Example
```yaml
local: {attention: sliding, window: 512, kv_heads: 2, head_dim: 256}
shared_local: {attention: sliding, window: 1024, kv_heads: 2, head_dim: 256, reads: 18}
```

## Fix
Give the reading kind the shape of the layer it reads, or read a layer that has its shape.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, PlacedKind, RuleContext, derived_head_dim
from kvgen._lint.rules._sharing import readers

CODE = "KV236"
NAME = "shared-layer-shape-mismatch"
SEVERITY = "error"

_FIELDS = (
    "attention",
    "window",
    "sink_tokens",
    "kv_heads",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "index_head_dim",
    "bytes_per_token",
    "extra_bytes_per_token",
)


def _shape(kind: PlacedKind) -> dict[str, object]:
    shape = {field: getattr(kind.kind, field) for field in _FIELDS}
    shape["head_dim"] = derived_head_dim(kind) if kind.kind.kv_heads is not None else None
    shape["dtype"] = kind.dtype
    return shape


def check(ctx: RuleContext) -> Iterator[Finding]:
    for reader in readers(ctx):
        target = reader.target
        if target is None or reader.reads >= reader.first or target.kind.reads is not None:
            continue
        if target.kind.attention not in ("full", "sliding"):
            continue  # KV235
        own, theirs = _shape(reader.kind), _shape(target)
        differ = [f"{k} {own[k]} vs {theirs[k]}" for k in own if own[k] != theirs[k]]
        if differ:
            yield Finding(
                (*reader.kind.loc, "reads"),
                f"{reader.kind.label} reads layer {reader.reads} (kind '{target.name}') of "
                f"another shape: {', '.join(differ)}",
                f"give the kind the shape of '{target.name}', or read a layer of its shape",
            )
