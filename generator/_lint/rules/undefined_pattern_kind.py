"""A layer pattern names a kind that is not defined.

## What it does
Reports every entry of `layers.pattern` that is not a key of the same stack's `layer_kinds`.

## Why it matters
Each layer takes its kind from the pattern; an unknown name leaves layers without a shape,
so the stack cannot be sized. It is usually a typo.

## Example
```yaml
layer_kinds:
  local: {attention: sliding, window: 1024, kv_heads: 8, head_dim: 128}
  global: {attention: full, kv_heads: 8, head_dim: 128}
layers: {count: 6, pattern: [local, lcoal, global]}
```

## Fix
Use one of the names defined under `layer_kinds`, or define the missing kind.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV205"
NAME = "undefined-pattern-kind"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for stack in ctx.stacks:
        defined = stack.stack.layer_kinds
        for i, name in enumerate(stack.stack.layers.pattern):
            if name not in defined:
                yield Finding(
                    (*stack.loc, "layers", "pattern", i),
                    f"pattern of {stack.label} names undefined layer kind '{name}'",
                    f"use one of: {', '.join(sorted(defined))}",
                )
