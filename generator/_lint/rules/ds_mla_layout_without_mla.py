"""The fp8_ds_mla cache layout on a kind that is not MLA.

## What it does
Reports a kind whose effective dtype (its own `dtype`, else its pool's `kv_cache_dtype`) is
`fp8_ds_mla` but whose shape is not an MLA latent (`kv_lora_rank` + `qk_rope_head_dim`):
standard attention heads or a raw `bytes_per_token`.

## Why it matters
fp8_ds_mla is FlashMLA's sparse-MLA row (vLLM `flashmla_sparse.py`): the no-RoPE latent in fp8
with an fp32 scale per 128 elements and the RoPE part in bf16, 656 B for DeepSeek-V3.2
(docs/cost-model.md §1). It has no meaning for K and V heads, so no byte count exists for such
a kind; a draft pool or extra layers of another shape inherit it easily from the family.

## Example
```yaml
kv_cache_dtype: fp8_ds_mla
...
  g: {attention: full, kv_heads: 8, head_dim: 128}
```

## Fix
Give the non-MLA kind (or its pool) its own `dtype` / `kv_cache_dtype`, such as `fp8` or
`bf16`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV238"
NAME = "ds-mla-layout-without-mla"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        layer = kind.kind
        if kind.dtype != "fp8_ds_mla" or layer.kv_lora_rank is not None:
            continue
        if layer.attention in ("none", "recurrent"):
            continue  # recurrent: scaled-layout-on-recurrent-state reports it
        yield Finding(
            (*kind.loc, "dtype") if layer.dtype is not None else kind.loc,
            f"{kind.label} is not MLA but its cache dtype is fp8_ds_mla (an MLA-only layout)",
            "give this kind its own 'dtype' (e.g. fp8 or bf16)",
            at="value" if layer.dtype is not None else "key",
        )
