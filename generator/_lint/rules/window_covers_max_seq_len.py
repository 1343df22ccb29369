"""A sliding window at least max_seq_len is full attention in disguise.

## What it does
Warns when a sliding kind's `window` is at least the model's `max_seq_len` (for a draft
pool: the longest `max_seq_len` of the family).

## Why it matters
The engine clamps a window to `max_seq_len` and then treats the layer as full attention
(docs/cost-model.md §1, window resolution). The spec then says "sliding" while every page is
kept, so a reader of the spec underestimates the cache by the whole SWA saving.

## Example
```yaml
max_seq_len: 8192
layer_kinds:
  local: {attention: sliding, window: 8192, kv_heads: 8, head_dim: 128}
```

## Fix
Declare the kind as `attention: full`, or use the real (smaller) window.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV202"
NAME = "window-covers-max-seq-len"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        window = kind.kind.window
        if kind.kind.attention != "sliding" or window is None:
            continue
        if window >= kind.stack.max_seq_len:
            yield Finding(
                (*kind.loc, "window"),
                f"window {window} of {kind.label} is not below max_seq_len "
                f"{kind.stack.max_seq_len}; the layer runs as full attention",
                "declare the kind 'attention: full' or use the real window",
            )
