"""A recurrent kind whose SSM heads do not divide into its B/C groups.

## What it does
Reports a `mamba:` state whose `num_heads` is not a multiple of `n_groups`.

## Why it matters
Each group of B/C projections serves `num_heads / n_groups` SSM heads, and tensor parallelism
splits heads and groups together: the engine asserts both divide by tp (docs/cost-model.md
§8). With heads that do not divide into groups no rank split is possible, not even tp=1 in the
kernels, so the state such a spec describes cannot be allocated.

## Example
```yaml
mamba:
  attention: recurrent
  mamba: {num_heads: 100, head_dim: 64, d_state: 128, n_groups: 8, d_conv: 4}
```

## Fix
Copy `num_heads` (`mamba_num_heads`, `linear_num_value_heads`) and `n_groups` (`n_groups`,
`linear_num_key_heads`) from the model's config.json; they divide in every released model.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV226"
NAME = "mamba-heads-not-grouped"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        state = kind.kind.mamba
        if state is not None and state.num_heads % state.n_groups:
            yield Finding(
                (*kind.loc, "mamba", "num_heads"),
                f"num_heads {state.num_heads} of {kind.label} is not a multiple of "
                f"n_groups {state.n_groups}",
                "copy num_heads and n_groups from the model's config.json",
            )
