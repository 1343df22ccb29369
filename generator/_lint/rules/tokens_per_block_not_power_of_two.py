"""tokens_per_block is not a power of two.

## What it does
Checks that `tokens_per_block` (the page size in tokens) is a power of two.

## Why it matters
Paged-attention kernels and the engine's block manager assume power-of-two pages; page
arithmetic (`ceil(a / tpb)`, block-table widths) is only exercised for those sizes, and an
odd page size makes the generated sizing disagree with what the runtime can build.

## Example
```yaml
tokens_per_block: 48
```

## Fix
Use a power of two; 32 is the engine default, 64 is common:
```yaml
tokens_per_block: 64
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV201"
NAME = "tokens-per-block-not-power-of-two"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    tpb = ctx.family.tokens_per_block
    if tpb & (tpb - 1):
        lower = 1 << (tpb.bit_length() - 1)
        yield Finding(
            ("tokens_per_block",),
            f"tokens_per_block {tpb} is not a power of two",
            f"use {lower} or {lower * 2}",
        )
