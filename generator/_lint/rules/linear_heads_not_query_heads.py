"""A linear-attention kind whose `num_heads` is not the model's `num_attention_heads`.

## What it does
Reports a `linear:` state whose `num_heads` differs from the model's `num_attention_heads`,
when the model gives it.

## Why it matters
A linear-attention (lightning) layer is multi-head attention without a softmax: every query
head keeps its own `head_dim x head_dim` matrix, so the state per request is
`num_attention_heads/tp x head_dim x head_dim` (docs/cost-model.md §8; vLLM's
`LinearAttention` reads `config.num_attention_heads`, SGLang's `BailingHybridConfig` sets
its linear KV heads to it). A `num_key_value_heads` copied from the model's full-attention
layers shrinks every slot of the state pool by the GQA ratio.

## Example
```yaml
models:
  - name: ling_linear
    num_attention_heads: 32
    layer_kinds:
      linear: {attention: recurrent, linear: {num_heads: 4, head_dim: 128}}
```

## Fix
Set `num_heads` to the model's `num_attention_heads` from its config.json.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV245"
NAME = "linear-heads-not-query-heads"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        state = kind.kind.linear
        model = kind.stack.model
        heads = model.num_attention_heads if model is not None else None
        if state is not None and heads and state.num_heads != heads:
            yield Finding(
                (*kind.loc, "linear", "num_heads"),
                f"num_heads {state.num_heads} of {kind.label} is not the model's "
                f"num_attention_heads {heads}",
                "set num_heads to num_attention_heads from the model's config.json: a "
                "linear-attention layer keeps one head_dim x head_dim matrix per query head",
            )
