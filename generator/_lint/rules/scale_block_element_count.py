"""A block-scaled cache whose rows do not divide into its scale blocks.

## What it does
For a kind whose effective dtype is `mxfp8` or `mxfp4`, checks that each row of elements one
scale block covers is a multiple of 32: `head_dim` for standard attention, `kv_lora_rank +
qk_rope_head_dim` for MLA. For `fp8_ds_mla`, checks that `kv_lora_rank` is a multiple of 128,
and for an `index_head_dim` (sparse-attention index-K cache) that it is a multiple of 128.

## Why it matters
MX layouts store one e8m0 scale byte per 32 elements; FlashMLA's fp8_ds_mla and the
DeepSeek-V3.2 indexer cache one fp32 scale per 128 elements (docs/cost-model.md §1). A row that
does not divide has no block layout the kernels accept: a block would straddle two heads, so
the scale count in the generated sizing would not be what any engine allocates.

## Example
```yaml
kv_cache_dtype: mxfp4
...
  global: {attention: full, kv_heads: 8, head_dim: 80}
```

## Fix
Check the shape against the model's config.json, or give this kind a dtype without block
scales (`fp8_per_token_head`, `fp8`, `bf16`).
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext, derived_head_dim
from kvgen.sizing.facts import DS_MLA_SCALE_BLOCK, INDEX_SCALE_BLOCK, MX_BLOCK

CODE = "KV237"
NAME = "scale-block-element-count"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        layer = kind.kind
        if layer.attention in ("none", "recurrent"):
            continue
        if layer.index_head_dim is not None and layer.index_head_dim % INDEX_SCALE_BLOCK:
            yield Finding(
                (*kind.loc, "index_head_dim"),
                f"{kind.label} has index_head_dim {layer.index_head_dim}, not a multiple of "
                f"the indexer cache's {INDEX_SCALE_BLOCK}-element fp32 scale block",
                "copy index_head_dim from the model's config.json",
            )
        if kind.dtype == "fp8_ds_mla" and layer.kv_lora_rank is not None:
            if layer.kv_lora_rank % DS_MLA_SCALE_BLOCK:
                yield Finding(
                    (*kind.loc, "kv_lora_rank"),
                    f"{kind.label} is fp8_ds_mla but kv_lora_rank {layer.kv_lora_rank} is not "
                    f"a multiple of its {DS_MLA_SCALE_BLOCK}-element fp32 scale block",
                    "check kv_lora_rank, or give this kind another 'dtype'",
                )
            continue
        if kind.dtype not in ("mxfp8", "mxfp4"):
            continue
        if layer.kv_lora_rank is not None:
            row = layer.kv_lora_rank + (layer.qk_rope_head_dim or 0)
            where, what = "kv_lora_rank", "kv_lora_rank + qk_rope_head_dim"
        elif layer.kv_heads is not None:
            head_dim = derived_head_dim(kind)
            if head_dim is None:
                continue  # underivable-head-dim reports it
            row, what = head_dim, "head_dim"
            where = "head_dim" if layer.head_dim is not None else "kv_heads"
        else:
            continue
        if row % MX_BLOCK:
            yield Finding(
                (*kind.loc, where),
                f"{kind.label} is {kind.dtype} but {what} = {row} is not a multiple of the "
                f"{MX_BLOCK}-element MX scale block",
                "check the shape, or give this kind another 'dtype'",
            )
        if layer.v_head_dim is not None and layer.v_head_dim % MX_BLOCK:
            yield Finding(
                (*kind.loc, "v_head_dim"),
                f"{kind.label} is {kind.dtype} but v_head_dim = {layer.v_head_dim} is not a "
                f"multiple of the {MX_BLOCK}-element MX scale block",
                "check v_head_dim, or give this kind another 'dtype'",
            )
