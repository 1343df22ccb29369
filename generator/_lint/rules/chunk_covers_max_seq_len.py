"""An attention chunk at least max_seq_len is full attention in disguise.

## What it does
Warns when a chunked kind's `chunk` is at least the model's `max_seq_len` (for a draft pool:
the longest `max_seq_len` of the family).

## Why it matters
A request's history never leaves its first chunk, so no page ever goes stale and the layer
costs exactly what a full-attention layer costs (docs/cost-model.md §1, §3). kvgen sizes it as
full attention; the spec saying "chunked" then misleads a reader into expecting a bounded
cache.

## Example
```yaml
max_seq_len: 8192
layer_kinds:
  local: {attention: chunked, chunk: 8192, kv_heads: 8, head_dim: 128}
```

## Fix
Declare the kind `attention: full`, or use the model's real `attention_chunk_size`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV228"
NAME = "chunk-covers-max-seq-len"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        chunk = kind.kind.chunk
        if kind.kind.attention != "chunked" or chunk is None:
            continue
        if chunk >= kind.stack.max_seq_len:
            yield Finding(
                (*kind.loc, "chunk"),
                f"chunk {chunk} of {kind.label} is not below max_seq_len "
                f"{kind.stack.max_seq_len}; no page ever goes stale, the layer runs as full "
                "attention",
                "declare the kind 'attention: full' or use the real chunk",
            )
