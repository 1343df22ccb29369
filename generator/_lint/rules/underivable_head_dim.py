"""`head_dim` is missing and cannot be derived.

## What it does
Reports a kind with `kv_heads` but no `head_dim` when the model does not give both
`hidden_size` and `num_attention_heads`, or when `num_attention_heads` does not divide
`hidden_size`. Draft and extra-layer stacks have no model dimensions, so they must give
`head_dim`.

## Why it matters
Bytes per token are `2 * ceil(kv_heads / tp) * head_dim * dtype_bytes` (docs/cost-model.md §1);
without `head_dim` the kind cannot be sized, and a rounded quotient would size the wrong cache.

## Example
```yaml
- name: tiny
  max_seq_len: 4096
  hidden_size: 1000
  num_attention_heads: 16
  layer_kinds: {g: {attention: full, kv_heads: 4}}
```

## Fix
Give `head_dim` explicitly (many models do not use `hidden_size / num_attention_heads`).
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._spec.models import Model

CODE = "KV217"
NAME = "underivable-head-dim"
SEVERITY = "error"


def _reason(model: Model | None) -> str | None:
    if model is None:
        return "a draft stack has no hidden_size to derive it from"
    if model.hidden_size is None or model.num_attention_heads is None:
        return f"model '{model.name}' lacks hidden_size or num_attention_heads"
    if model.hidden_size % model.num_attention_heads:
        return (
            f"num_attention_heads {model.num_attention_heads} of model '{model.name}' "
            f"does not divide hidden_size {model.hidden_size}"
        )
    return None


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if kind.kind.kv_heads is None or kind.kind.head_dim is not None:
            continue
        if kind.kind.attention == "none":
            continue  # cache-less-kind-with-fields reports the stray kv_heads
        reason = _reason(kind.stack.model)
        if reason:
            yield Finding(
                (*kind.loc, "kv_heads"),
                f"{kind.label} has no head_dim and it cannot be derived: {reason}",
                "add head_dim to the kind",
            )
