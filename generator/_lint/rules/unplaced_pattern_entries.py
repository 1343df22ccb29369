"""A layer pattern longer than the layer count.

## What it does
Warns when `layers.pattern` has more entries than `layers.count`; the entries past `count`
are never placed on a layer.

## Why it matters
The pattern repeats cyclically over `count` layers, so trailing entries are dead. This usually
means the count is wrong (e.g. the per-rank count of a pipeline stage instead of the model's),
or the pattern was written out layer by layer and then truncated.

## Example
```yaml
layers: {count: 4, pattern: [local, local, local, local, local, global]}
```

## Fix
Check `count` against the model's config, and shorten the pattern to its repeating unit.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV221"
NAME = "unplaced-pattern-entries"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for stack in ctx.stacks:
        layers = stack.stack.layers
        if len(layers.pattern) > layers.count:
            yield Finding(
                (*stack.loc, "layers", "pattern", layers.count),
                f"pattern of {stack.label} has {len(layers.pattern)} entries but only "
                f"{layers.count} layers; entries from index {layers.count} on are never used",
                "check layers.count, and shorten the pattern to its repeating unit",
            )
