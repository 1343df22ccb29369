"""A kind that reads (KV sharing) a layer the stack does not have.

## What it does
Reports a kind whose `reads` is not a layer index of its own stack (`0 .. count - 1`).

## Why it matters
A layer with `reads` holds no cache: it attends over the cache of the layer it names, and the
static cost charges it nothing (docs/cost-model.md §1). When no such layer exists, the engine
refuses the model (vLLM `validate_kv_sharing_target`: the target "is not an Attention layer
that exists in the model"), and the cost would have dropped a layer that needs its own cache.

## Example
```yaml
shared_global: {attention: full, kv_heads: 2, head_dim: 256, reads: 40}  # count: 35
```

## Fix
Name the index of the earlier layer whose cache the kind reads (Gemma 3n: the last layer of
the same type before `num_hidden_layers - num_kv_shared_layers`), or remove `reads` if the
layer keeps its own cache.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._lint.rules._sharing import readers

CODE = "KV233"
NAME = "shared-layer-out-of-range"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for reader in readers(ctx):
        count = reader.kind.stack.stack.layers.count
        if reader.reads >= count:
            yield Finding(
                (*reader.kind.loc, "reads"),
                f"{reader.kind.label} reads layer {reader.reads}, but "
                f"{reader.kind.stack.label} has {count} layers (0 .. {count - 1})",
                "name the index of the earlier layer whose cache it reads, or remove 'reads'",
            )
