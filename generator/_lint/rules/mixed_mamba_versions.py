"""A layer stack whose recurrent kinds mix Mamba-1 (`mamba1:`) and Mamba-2 (`mamba:`) states.

## What it does
Reports a `mamba1:` kind in a stack that also has a `mamba:` kind (or the other way round).

## Why it matters
A released model uses one Mamba version in every recurrent layer: Jamba is Mamba-1 throughout,
Nemotron-H and Granite 4.0 are Mamba-2 throughout. The two keep different state per layer
(docs/cost-model.md §8: Mamba-1 has `d_inner` channels of `d_state`, Mamba-2 heads of
`head_dim x d_state` plus B/C groups in the conv window), so a stack with both is almost
always a kind copied from another family's spec, and every slot of its state pool is sized
from the wrong formula.

## Example
```yaml
layer_kinds:
  m1: {attention: recurrent, mamba1: {d_inner: 8192, d_state: 16, d_conv: 4}}
  m2:
    attention: recurrent
    mamba: {num_heads: 128, head_dim: 64, d_state: 128, n_groups: 8, d_conv: 4}
```

## Fix
Describe every recurrent layer of the model with its one Mamba version, from the model's
config.json (Jamba: `mamba_expand`, `mamba_d_state`, `mamba_d_conv`; Mamba-2 models:
`mamba_num_heads`, `mamba_head_dim`, `ssm_state_size`, `n_groups`, `conv_kernel`).
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV244"
NAME = "mixed-mamba-versions"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for stack in ctx.stacks:
        kinds = stack.stack.layer_kinds
        mamba2 = [name for name, kind in kinds.items() if kind.mamba is not None]
        if not mamba2:
            continue
        for name, kind in kinds.items():
            if kind.mamba1 is not None:
                yield Finding(
                    (*stack.loc, "layer_kinds", name, "mamba1"),
                    f"layer kind '{name}' of {stack.label} is Mamba-1 but '{mamba2[0]}' is Mamba-2",
                    "describe every recurrent layer with the model's one Mamba version",
                    at="key",
                )
