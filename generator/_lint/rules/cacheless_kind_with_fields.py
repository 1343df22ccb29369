"""A cache-less (`attention: none`) kind that gives a shape, window or state.

## What it does
Reports every field beside `attention` on a kind with `attention: none`: a shape (`kv_heads`,
`head_dim`, `kv_lora_rank`, `qk_rope_head_dim`, `bytes_per_token`, `extra_bytes_per_token`),
a `window` or `sink_tokens`, a `state_bytes` or a `dtype`.

## Why it matters
`attention: none` marks a layer that holds no KV cache at all (an MLP-only or MoE-only block of
a hybrid such as Nemotron-H): it costs nothing and only keeps its place in the layer index, so
that pipeline ranks split the model's layers as the engine does. A shape on it is either a
layer that really has a cache (and is then mis-declared and under-sized) or dead data.

## Example
```yaml
mlp: {attention: none, kv_heads: 8, head_dim: 128}
```

## Fix
Remove the fields (`mlp: {attention: none}`), or give the kind its real attention type
(`full`, `sliding` or `recurrent`) if the layer does keep a cache.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV225"
NAME = "cacheless-kind-with-fields"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.kind.attention != "none":
            continue
        for field in sorted(kind.kind.model_fields_set - {"attention"}):
            yield Finding(
                (*kind.loc, field),
                f"{kind.label} has attention 'none' (no cache) but gives {field}",
                f"remove {field}, or declare the kind's real attention type",
                at="key",
            )
