"""A cross-attention kind without its encoder token count.

## What it does
Reports a kind with `attention: cross` that does not give `encoder_tokens`.

## Why it matters
A cross-attention layer caches the K/V of the request's encoder output once, at admission:
`ceil(encoder_tokens / tpb)` pages per request and layer, never more (docs/cost-model.md §4).
Without the count the layer cannot be sized; a runtime `encoder_tokens=` may lower it, never
raise it, so the spec must give the most the encoder produces.

## Example
```yaml
cross_attn: {attention: cross, kv_heads: 8, head_dim: 128}
```

## Fix
Give the encoder tokens per request, e.g. Llama 3.2 Vision's 4 tiles x 1601 tokens:
```yaml
cross_attn: {attention: cross, kv_heads: 8, head_dim: 128, encoder_tokens: 6404}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV230"
NAME = "cross-kind-without-encoder-tokens"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.kind.attention == "cross" and kind.kind.encoder_tokens is None:
            yield Finding(
                (*kind.loc, "attention"),
                f"{kind.label} is cross-attention but has no encoder_tokens",
                "add 'encoder_tokens: <encoder tokens per request>' (the most the encoder "
                "produces), or declare the kind 'attention: full'",
            )
