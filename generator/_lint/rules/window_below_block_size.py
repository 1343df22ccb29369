"""A sliding window smaller than one page.

## What it does
Warns when a sliding kind's `window` is smaller than `tokens_per_block`.

## Why it matters
Pages are the unit of allocation: a window shorter than a page still holds at least two pages
per request at the peak (docs/cost-model.md §3), so most of each page is wasted and the window
saves far less than its size suggests. It often means the window was written in pages, not
tokens.

## Example
```yaml
tokens_per_block: 64
...
  local: {attention: sliding, window: 16, kv_heads: 8, head_dim: 128}
```

## Fix
Check that the window is in tokens; consider a smaller `tokens_per_block`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV216"
NAME = "window-below-block-size"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    tpb = ctx.family.tokens_per_block
    for kind in ctx.kinds:
        window = kind.kind.window
        if kind.kind.attention == "sliding" and window is not None and window < tpb:
            yield Finding(
                (*kind.loc, "window"),
                f"window {window} of {kind.label} is smaller than tokens_per_block {tpb}",
                "check that the window is in tokens, not pages",
            )
