"""A quantized layout with scales as the dtype of a recurrent state.

## What it does
Reports a recurrent kind given by its `mamba:` or `mamba1:` dimensions, or a parallel hybrid
layer (a full kind with `mamba:` beside `kv_heads`, whose conv window takes the kind's dtype),
whose conv dtype (its `dtype`, else its pool's `kv_cache_dtype`) or `ssm_dtype` is one of the
scaled layouts
`nvfp4`, `fp8_per_token_head`, `int8_per_token_head`, `mxfp8`, `mxfp4` or `fp8_ds_mla`.

## Why it matters
Those layouts quantize attention K/V rows (or an MLA latent) with per-head or per-block scales
(docs/cost-model.md §1). The engines keep a Mamba / linear-attention state in a plain dtype
(the model dtype, or fp32 for the SSM part, §8), so there is no state size to charge for such a
spec (and no engine pool to compare it with); a hybrid family inherits the attention pool's
quantized dtype easily. A recurrent kind given as raw `state_bytes` is not affected: its bytes
are what they are, whatever the pool's dtype.

## Example
```yaml
kv_cache_dtype: mxfp8
...
  ssm:
    attention: recurrent
    mamba: {num_heads: 128, head_dim: 64, d_state: 128, n_groups: 8, d_conv: 4}
```

## Fix
Give the recurrent kind its own plain `dtype` (e.g. `bf16`) and, if the engine keeps it so,
`ssm_dtype: fp32`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._spec.models import SCALED_DTYPES

CODE = "KV239"
NAME = "scaled-layout-on-recurrent-state"
SEVERITY = "error"

# Every scaled layout, nvfp4 too: the engines' state pools hold plain elements only, and the
# engine models (generated ``engine_capacity``) have no byte size for a scaled state.
ATTENTION_ONLY = SCALED_DTYPES


def check(ctx: RuleContext) -> Iterator[Finding]:
    for kind in ctx.kinds:
        state = kind.kind.recurrent_dims  # mamba: or mamba1: (lowered), None for state_bytes
        holds_state = kind.kind.attention == "recurrent" or kind.kind.parallel_state
        if not holds_state or state is None:
            continue
        if kind.dtype in ATTENTION_ONLY:
            explicit = kind.kind.dtype is not None
            what = (
                "holds a Mamba-2 state beside its K/V (a parallel hybrid layer, conv window in "
                "the kind's dtype)"
                if kind.kind.parallel_state
                else "is a recurrent state"
            )
            yield Finding(
                (*kind.loc, "dtype") if explicit else kind.loc,
                f"{kind.label} {what} in {kind.dtype}, a layout for attention K/V with scales",
                "give the recurrent kind its own plain 'dtype' (e.g. bf16)",
                at="value" if explicit else "key",
            )
        if state.ssm_dtype in ATTENTION_ONLY:
            block = "mamba" if kind.kind.mamba is not None else "mamba1"
            yield Finding(
                (*kind.loc, block, "ssm_dtype"),
                f"{kind.label} keeps its SSM state in {state.ssm_dtype}, a layout for "
                "attention K/V with scales",
                "use a plain ssm_dtype (fp32, bf16 or fp16)",
            )
