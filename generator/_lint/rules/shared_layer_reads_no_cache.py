"""A kind that reads (KV sharing) a layer that holds no attention cache of its own.

## What it does
Reports a kind whose `reads` names a layer that itself reads another layer's cache (a chain),
or a layer of any kind but `full` and `sliding` attention: `none`, `recurrent`, `chunked` or
`cross`.

## Why it matters
Only a layer with its own K/V cache can be read: a reading layer holds no pages, a cache-less
layer none at all, and a recurrent layer keeps a fixed state, not per-token keys and values.
The engines point every reader at the layer that owns the cache (transformers Gemma 3n: the
last non-shared layer of the same type; vLLM `kv_sharing_target_layer_name` must name a layer
with a KV cache spec). A chain would hide which cache the layer really needs. A chunked layer
drops its pages chunk by chunk and a cross-attention layer holds encoder tokens, not the
decoder's history: no engine lets a decoder layer read either (Gemma 3n and vLLM share full
and sliding caches only), the generated allocator refuses such a table when it is imported,
and the sizing would charge the reader nothing for a cache that cannot serve it.

## Example
```yaml
shared_a: {attention: full, kv_heads: 2, head_dim: 256, reads: 19}
shared_b: {attention: full, kv_heads: 2, head_dim: 256, reads: 24}  # layer 24 is shared_a
```

## Fix
Name the layer that owns the cache (`reads: 19` for both kinds above).
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._lint.rules._sharing import readers

CODE = "KV235"
NAME = "shared-layer-reads-no-cache"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for reader in readers(ctx):
        target = reader.target
        if target is None or reader.reads >= reader.first:
            continue  # KV233 / KV234 / KV205 report those
        if target.kind.reads is not None:
            why = f"itself reads layer {target.kind.reads}"
            fix = f"name the layer that owns the cache ('reads: {target.kind.reads}')"
        elif target.kind.attention in ("none", "recurrent"):
            why = f"has attention '{target.kind.attention}' (no K/V cache)"
            fix = "name an earlier full or sliding attention layer with its own cache"
        elif target.kind.attention in ("chunked", "cross"):
            why = f"has attention '{target.kind.attention}' (a cache no other layer can read)"
            fix = "name an earlier full or sliding attention layer with its own cache"
        else:
            continue
        yield Finding(
            (*reader.kind.loc, "reads"),
            f"{reader.kind.label} reads layer {reader.reads} (kind '{target.name}'), which {why}",
            fix,
        )
