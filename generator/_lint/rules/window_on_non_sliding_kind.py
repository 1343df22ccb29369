"""A window on a full-attention or recurrent kind.

## What it does
Reports `window` on a kind whose `attention` is `full` or `recurrent`.

## Why it matters
Only sliding layers have a window. On a natively full layer a window override does not move the
layer out of the fixed cost (docs/cost-model.md §1), and counting it as bounded is a known
source of drift (docs/cost-model.md §7, item 6). A recurrent layer holds a fixed state, not a
token window.

## Example
```yaml
global: {attention: full, window: 4096, kv_heads: 8, head_dim: 128}
```

## Fix
Remove `window`, or declare the kind `attention: sliding` if it really is windowed.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV203"
NAME = "window-on-non-sliding-kind"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.kind.attention == "none":
            continue  # cache-less-kind-with-fields reports every field of a `none` kind
        if kind.kind.window is not None and kind.kind.attention != "sliding":
            yield Finding(
                (*kind.loc, "window"),
                f"{kind.label} has a window but attention '{kind.kind.attention}'",
                "remove window, or declare the kind 'attention: sliding'",
                at="key",
            )
