"""`sink_tokens` on a kind that is not sliding.

## What it does
Warns about a non-zero `sink_tokens` on a `full` or `recurrent` kind.

## Why it matters
Attention sinks are the first tokens a sliding layer keeps forever beside its window
(docs/cost-model.md §3, stale range). A full layer keeps every token anyway and a recurrent
layer keeps none, so the value is ignored and suggests the kind was meant to be sliding.

## Example
```yaml
global: {attention: full, sink_tokens: 4, kv_heads: 8, head_dim: 128}
```

## Fix
Remove `sink_tokens`, or declare the kind `attention: sliding` with its window.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV222"
NAME = "sink-tokens-without-window"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.kind.sink_tokens and kind.kind.attention not in ("sliding", "none"):
            yield Finding(
                (*kind.loc, "sink_tokens"),
                f"sink_tokens of {kind.label} are ignored: its attention is "
                f"'{kind.kind.attention}'",
                "remove sink_tokens",
                at="key",
            )
