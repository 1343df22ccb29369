"""A recurrent kind without `state_bytes`, `mamba` or `mamba1`.

## What it does
Reports a kind with `attention: recurrent` that gives neither `state_bytes` nor `mamba` nor
`mamba1` (for example one that gives `kv_heads` or `bytes_per_token` instead).

## Why it matters
A recurrent (Mamba, linear-attention) layer keeps a fixed state per request and no per-token
cache; sizing it per token would charge memory that grows with the sequence and miss the
per-request state.

## Example
```yaml
mamba: {attention: recurrent, kv_heads: 8, head_dim: 128}
```

## Fix
Give the state's dimensions (split by tp as the engine does, docs/cost-model.md §8):
```yaml
mamba:
  attention: recurrent
  mamba: {num_heads: 128, head_dim: 64, d_state: 128, n_groups: 8, d_conv: 4}
```
(a Mamba-1 layer, Jamba: `mamba1: {d_inner: 8192, d_state: 16, d_conv: 4}`), or, as the raw
form, the state size per request per layer at tp=1:
```yaml
mamba: {attention: recurrent, state_bytes: 2359296}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV219"
NAME = "recurrent-kind-without-state"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        if (
            kind.kind.attention == "recurrent"
            and kind.kind.state_bytes is None
            and kind.kind.recurrent_dims is None
        ):
            yield Finding(
                (*kind.loc, "attention"),
                f"{kind.label} is recurrent but has neither mamba, mamba1 nor state_bytes",
                "give mamba: {num_heads, head_dim, d_state, n_groups, d_conv} (or state_bytes) "
                "instead of a per-token shape",
            )
