"""A layer kind that no layer uses.

## What it does
Warns about a key of `layer_kinds` that is not placed on any layer, i.e. it does not appear
among the first `count` entries of `layers.pattern`.

## Why it matters
An unused kind costs nothing, so the spec describes a shape the generated code never sizes.
It is usually a leftover or a sign that the pattern is wrong.

## Example
```yaml
layer_kinds:
  local: {attention: sliding, window: 1024, kv_heads: 8, head_dim: 128}
  global: {attention: full, kv_heads: 8, head_dim: 128}
layers: {count: 4, pattern: [local]}
```

## Fix
Remove the kind, or name it in the pattern.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext, placed_kinds

CODE = "KV206"
NAME = "unused-layer-kind"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for stack in ctx.stacks:
        placed = set(placed_kinds(stack.stack))
        for name in stack.stack.layer_kinds:
            if name not in placed:
                yield Finding(
                    (*stack.loc, "layer_kinds", name),
                    f"layer kind '{name}' of {stack.label} is not used by any layer",
                    "remove it, or name it in layers.pattern",
                    at="key",
                )
