"""A kind that reads (KV sharing) a layer that does not come before every layer of the kind.

## What it does
Reports a kind whose `reads` is not below the index of the kind's first layer, including a
kind that would read its own layer.

## Why it matters
A layer can only attend over a cache that an earlier layer has written in the same forward
pass; the engines refuse anything else (vLLM `validate_kv_sharing_target`: the target "must
come before the current layer", "cannot be the same as the current layer"). Since the cost
charges a reading layer nothing (docs/cost-model.md §1), a wrong index silently drops a cache
the model needs.

## Example
```yaml
layer_kinds:
  shared_local: {attention: sliding, window: 512, kv_heads: 2, head_dim: 256, reads: 25}
layers: {count: 35, pattern: [..., shared_local, ...]}  # first shared_local is layer 20
```

## Fix
Name a layer before the kind's first layer (Gemma 3n: `num_hidden_layers -
num_kv_shared_layers - 2` for sliding layers, `- 1` for global ones).
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._lint.rules._sharing import readers

CODE = "KV234"
NAME = "shared-layer-not-earlier"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for reader in readers(ctx):
        count = reader.kind.stack.stack.layers.count
        if reader.first <= reader.reads < count:
            yield Finding(
                (*reader.kind.loc, "reads"),
                f"{reader.kind.label} reads layer {reader.reads}, which does not come before "
                f"layer {reader.first}, the kind's first layer",
                f"name a layer below {reader.first} whose cache the kind reads",
            )
