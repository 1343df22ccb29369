"""An attention kind with no per-token shape.

## What it does
Reports a `full` or `sliding` kind that gives none of `kv_heads` (+ `head_dim`),
`kv_lora_rank` + `qk_rope_head_dim` (MLA) or `bytes_per_token`. A `state_bytes` alone does not
count: it is the shape of a recurrent layer. An `attention: none` kind needs no shape (it holds
no cache).

## Why it matters
Attention layers cost bytes per token (docs/cost-model.md §1); a kind without a shape cannot be
sized.

## Example
```yaml
global: {attention: full}
```

## Fix
Give the shape, e.g. `{attention: full, kv_heads: 8, head_dim: 128}`; use
`attention: recurrent` for a layer with a fixed state, `attention: none` for one without cache.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV218"
NAME = "attention-kind-without-shape"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        layer = kind.kind
        if layer.attention in ("recurrent", "none"):
            continue  # a recurrent kind's shape is state_bytes; a `none` kind has no cache
        if layer.kv_heads is None and layer.kv_lora_rank is None and layer.bytes_per_token is None:
            detail = "; state_bytes is for recurrent kinds" if layer.state_bytes else ""
            yield Finding(
                kind.loc,
                f"{kind.label} has no per-token shape{detail}",
                "give kv_heads and head_dim, kv_lora_rank and qk_rope_head_dim, or bytes_per_token",
                at="key",
            )
