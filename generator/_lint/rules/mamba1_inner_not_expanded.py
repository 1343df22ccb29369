"""A Mamba-1 kind whose `d_inner` is not a whole multiple of the model's `hidden_size`.

## What it does
Reports a `mamba1:` state whose `d_inner` does not divide by the model's `hidden_size`, when
the model gives `hidden_size`.

## Why it matters
A Mamba-1 layer (Jamba) projects every token to `d_inner = mamba_expand * hidden_size`
channels, and both of its buffers are per channel: the conv window `d_inner x (d_conv - 1)`
and the SSM state `d_inner x d_state` (docs/cost-model.md §8). The config gives
`mamba_expand` and `hidden_size` separately; writing `hidden_size` alone, or a Mamba-2
`num_heads * head_dim` from another model, halves or skews every recurrent slot, and the
engine's state pool with it.

## Example
```yaml
models:
  - name: jamba_1_5_mini
    hidden_size: 4096
    layer_kinds:
      mamba: {attention: recurrent, mamba1: {d_inner: 6000, d_state: 16, d_conv: 4}}
```

## Fix
Set `d_inner` to `mamba_expand * hidden_size` from the model's config.json (2 * 4096 = 8192
for Jamba), or let `kvgen import-hf` derive it.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV243"
NAME = "mamba1-inner-not-expanded"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        state = kind.kind.mamba1
        model = kind.stack.model
        hidden = model.hidden_size if model is not None else None
        if state is not None and hidden and state.d_inner % hidden:
            yield Finding(
                (*kind.loc, "mamba1", "d_inner"),
                f"d_inner {state.d_inner} of {kind.label} is not a multiple of the model's "
                f"hidden_size {hidden}",
                "set d_inner to mamba_expand * hidden_size from the model's config.json",
            )
