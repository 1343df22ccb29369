"""An nvfp4 cache whose element count per token is not a multiple of 16.

## What it does
For a kind whose effective dtype is `nvfp4`, checks that the elements per token are a multiple
of 16: `kv_heads * head_dim` (per rank at tp=1) for standard attention, `kv_lora_rank +
qk_rope_head_dim` for MLA.

## Why it matters
NVFP4 stores `n / 2` packed bytes plus one FP8 scale per 16 elements (docs/cost-model.md §1). A
count that is not a multiple of 16 has no valid block-scale layout, so the kernel cannot use it
and the byte count in the generated sizing is wrong.

## Example
```yaml
kv_cache_dtype: nvfp4
...
  mla: {attention: full, kv_lora_rank: 500, qk_rope_head_dim: 64}
```

## Fix
Check the shape against the model's config, or use a dtype other than nvfp4 for this kind.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext, derived_head_dim

CODE = "KV212"
NAME = "nvfp4-element-count"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.dtype != "nvfp4" or kind.kind.attention == "none":
            continue
        layer = kind.kind
        if layer.kv_lora_rank is not None:
            elements = layer.kv_lora_rank + (layer.qk_rope_head_dim or 0)
            where = "kv_lora_rank"
            what = "kv_lora_rank + qk_rope_head_dim"
        elif layer.kv_heads is not None:
            head_dim = derived_head_dim(kind)
            if head_dim is None:
                continue  # underivable-head-dim reports it
            elements = layer.kv_heads * head_dim
            where = "head_dim" if layer.head_dim is not None else "kv_heads"
            what = "kv_heads * head_dim"
        else:
            continue
        if elements % 16:
            yield Finding(
                (*kind.loc, where),
                f"{kind.label} is nvfp4 but {what} = {elements} is not a multiple of 16",
                "check the shape, or give this kind another 'dtype'",
            )
        if layer.kv_heads is not None and layer.v_head_dim is not None:
            values = layer.kv_heads * layer.v_head_dim  # V's row, scaled on its own
            if values % 16:
                yield Finding(
                    (*kind.loc, "v_head_dim"),
                    f"{kind.label} is nvfp4 but kv_heads * v_head_dim = {values} is not a "
                    "multiple of 16",
                    "check v_head_dim, or give this kind another 'dtype'",
                )
