"""A draft layer's dtype differs from the family's while the draft pool does not say so.

## What it does
Warns when a layer kind of `draft` or `extra_layers` sets a `dtype` different from the
family's `kv_cache_dtype` while that stack gives no `kv_cache_dtype` of its own.

## Why it matters
Charging a bf16 draft pool at the target's fp8 rate is a known drift source (docs/cost-model.md
§7, item 8). When the draft stack inherits the family dtype but one of its kinds overrides it, a
reviewer cannot tell whether the pool really is mixed or the override is a mistake.

## Example
```yaml
kv_cache_dtype: fp8
...
    draft:
      layer_kinds: {d: {attention: full, kv_heads: 8, head_dim: 128, dtype: bf16}}
      layers: {count: 1, pattern: [d]}
```

## Fix
State the draft pool's dtype explicitly:
```yaml
    draft:
      kv_cache_dtype: bf16
      layer_kinds: {d: {attention: full, kv_heads: 8, head_dim: 128}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV211"
NAME = "implicit-draft-dtype"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    family_dtype = ctx.family.kv_cache_dtype
    for kind in ctx.kinds:
        if not kind.stack.is_draft or kind.stack.stack.kv_cache_dtype is not None:
            continue
        if kind.kind.attention == "none":
            continue  # a cache-less kind has no dtype to inherit
        if kind.kind.dtype is not None and kind.kind.dtype != family_dtype:
            yield Finding(
                (*kind.loc, "dtype"),
                f"{kind.label} uses {kind.kind.dtype} while the pool inherits "
                f"{family_dtype} from the family",
                f"set 'kv_cache_dtype: {kind.kind.dtype}' on the {kind.stack.loc[-1]} stack",
            )
