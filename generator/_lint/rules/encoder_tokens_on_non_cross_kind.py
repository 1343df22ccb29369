"""Encoder tokens on a kind that is not cross-attention.

## What it does
Reports `encoder_tokens` on a `full`, `sliding` or `recurrent` kind (an `attention: none` kind
is reported by KV225).

## Why it matters
Only a cross-attention layer caches the encoder's output (docs/cost-model.md §4); on any other
kind the count is ignored, so the spec says the layer costs something it does not. Usually
the kind was meant to be `attention: cross` and is now sized as a self-attention layer that
grows with every token.

## Example
```yaml
cross_attn: {attention: full, kv_heads: 8, head_dim: 128, encoder_tokens: 6404}
```

## Fix
Declare the kind `attention: cross`, or remove `encoder_tokens`:
```yaml
cross_attn: {attention: cross, kv_heads: 8, head_dim: 128, encoder_tokens: 6404}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV231"
NAME = "encoder-tokens-on-non-cross-kind"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        attention = kind.kind.attention
        if attention in ("cross", "none"):
            continue  # cache-less-kind-with-fields reports every field of a `none` kind
        if kind.kind.encoder_tokens is not None:
            yield Finding(
                (*kind.loc, "encoder_tokens"),
                f"{kind.label} gives encoder_tokens but has attention '{attention}'",
                "declare the kind 'attention: cross', or remove encoder_tokens",
                at="key",
            )
