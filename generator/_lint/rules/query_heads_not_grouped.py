"""An attention kind whose `kv_heads` does not divide the model's `num_attention_heads`.

## What it does
Reports a K/V-caching kind (not MLA) whose `kv_heads` does not divide the model's
`num_attention_heads`, when the model gives it.

## Why it matters
Grouped-query attention shares each K/V head among `num_attention_heads / kv_heads` query
heads, so the count must divide. vLLM's attention layer asserts it when it is built at
start-up ("num_heads (N) is not divisible by num_kv_heads (M)",
`vllm/model_executor/layers/attention/attention.py`), and the engines' tensor-parallel checks
read both counts: a wrong `kv_heads` (the query heads' count copied into it, or another
layer's) sizes every token of every layer wrongly and refuses or accepts the wrong tp.

## Example
```yaml
models:
  - name: tiny
    num_attention_heads: 32
    layer_kinds:
      full: {attention: full, kv_heads: 12, head_dim: 128}
```

## Fix
Copy `num_key_value_heads` and `num_attention_heads` from the model's config.json.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV246"
NAME = "query-heads-not-grouped"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        model = kind.stack.model
        heads = model.num_attention_heads if model is not None else None
        kv_heads = kind.kind.kv_heads
        if not heads or not kv_heads or kind.kind.attention == "none":
            continue
        if kind.kind.kv_lora_rank is not None:  # MLA: one latent, no K/V heads
            continue
        if heads % kv_heads:
            yield Finding(
                (*kind.loc, "kv_heads"),
                f"kv_heads {kv_heads} of {kind.label} does not divide the model's "
                f"num_attention_heads {heads}: vLLM asserts 'num_heads ({heads}) is not "
                f"divisible by num_kv_heads ({kv_heads})' at start-up "
                "(vllm/model_executor/layers/attention/attention.py)",
                "copy num_key_value_heads and num_attention_heads from the model's config.json",
            )
