"""A sliding kind without a window.

## What it does
Reports a kind with `attention: sliding` that does not give `window`.

## Why it matters
The window is what makes a sliding layer cheaper than a full one: the per-request page count
`ceil((w + H - 2) / tpb) + 1` (docs/cost-model.md §3) needs it. Without it the layer cannot be
sized.

## Example
```yaml
local: {attention: sliding, kv_heads: 8, head_dim: 128}
```

## Fix
Add the window in tokens, or declare the kind `attention: full`:
```yaml
local: {attention: sliding, window: 1024, kv_heads: 8, head_dim: 128}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV204"
NAME = "sliding-kind-without-window"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.kind.attention == "sliding" and kind.kind.window is None:
            yield Finding(
                (*kind.loc, "attention"),
                f"{kind.label} is sliding but has no window",
                "add 'window: <tokens>', or declare the kind 'attention: full'",
            )
