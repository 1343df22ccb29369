"""A chunk on a kind that is not chunked.

## What it does
Reports `chunk` on a kind whose `attention` is `full`, `sliding` or `recurrent`.

## Why it matters
Only `attention: chunked` layers free the pages of earlier chunks (docs/cost-model.md §3). On
any other kind `chunk` is ignored, so a spec that meant a chunked layer is sized as full
attention (or as a window) without a word, and the two can differ by the whole cache of the
layer. It usually comes from copying `attention_chunk_size` without changing `attention`.

## Example
```yaml
local: {attention: full, chunk: 8192, kv_heads: 8, head_dim: 128}
```

## Fix
Declare the kind `attention: chunked`, or remove `chunk`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV229"
NAME = "chunk-on-non-chunked-kind"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.kind.attention in ("none", "chunked"):
            continue  # cache-less-kind-with-fields reports every field of a `none` kind
        if kind.kind.chunk is not None:
            yield Finding(
                (*kind.loc, "chunk"),
                f"{kind.label} has a chunk but attention '{kind.kind.attention}'",
                "declare the kind 'attention: chunked', or remove chunk",
                at="key",
            )
