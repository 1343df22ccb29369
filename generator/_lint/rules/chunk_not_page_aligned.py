"""An attention chunk that is not a whole number of pages.

## What it does
Warns when a chunked kind's `chunk` is below `tokens_per_block` or not a multiple of it.

## Why it matters
A chunked layer frees the pages wholly before its current chunk's start (docs/cost-model.md §3,
vLLM `ChunkedLocalAttentionManager`). When `tokens_per_block` does not divide the chunk, chunk
starts fall inside pages and the page holding a start is kept for the whole chunk: the peak
is `ceil((C + H - 1 + tpb - gcd(C, tpb)) / tpb)` pages per request instead of
`ceil((C + H - 1) / tpb)`, up to one page more per request and layer than the chunk suggests.
A chunk below one page frees nothing most of the time. Published chunked models use chunks
that are multiples of every common page size (Llama 4: 8192); a different value often means
the chunk was written in pages or copied from another field.

## Example
```yaml
tokens_per_block: 32
...
  local: {attention: chunked, chunk: 100, kv_heads: 8, head_dim: 128}
```

## Fix
Check the chunk against the model's `attention_chunk_size`; choose a `tokens_per_block` that
divides it.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV227"
NAME = "chunk-not-page-aligned"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    tpb = ctx.family.tokens_per_block
    for kind in ctx.kinds:
        chunk = kind.kind.chunk
        if kind.kind.attention != "chunked" or chunk is None or chunk % tpb == 0:
            continue
        what = "smaller than" if chunk < tpb else "not a multiple of"
        yield Finding(
            (*kind.loc, "chunk"),
            f"chunk {chunk} of {kind.label} is {what} tokens_per_block {tpb}; chunk starts "
            "fall inside pages, which stay held for the whole chunk",
            "check that the chunk is in tokens, or use a tokens_per_block that divides it",
        )
