"""Recurrent state as a spec gives it (docs/cost-model.md §8; Mamba-2 / Gated DeltaNet, with
Mamba-1 and linear attention lowered to Mamba-2 dimensions): the buffers of one layer on one
rank (the engine models read them), and a kind's state dimensions as the generated tables'
fields. The generated modules compute the same numbers in ``kvgen.sizing.sizing_core`` and the shim
in ``kvgen.runtime._recurrent``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvgen._model.quant import element_bytes
from kvgen._spec.models import LayerKind, MambaState
from kvgen.sizing.facts import state_heads_name, uneven_state


@dataclass(frozen=True)
class RecurrentState:
    """One recurrent layer's buffers on one rank, in bytes per slot (§8)."""

    conv: int  # conv window: conv_dim/tp x (d_conv - 1), cache dtype
    ssm: int  # SSM state: num_heads/tp x head_dim x d_state, SSM dtype
    replay_step: int  # one replay history step: x (heads/tp x head_dim) + B (groups/tp x d_state)
    replay_scalars: int  # one replay history step of dt and dA_cumsum: 2 x heads/tp x fp32


def recurrent_state(state: MambaState, dtype: str, tp_size: int) -> RecurrentState:
    """The conv and SSM buffers of a ``mamba:`` kind at ``tp_size`` (§8), the conv state in
    ``dtype`` (the kind's cache dtype); ValueError naming tp_size when the heads or the conv
    channels do not split evenly (the engine asserts)."""
    conv_dim = state.conv_dim
    heads_name = state_heads_name(state.n_groups, state.d_conv)
    for what, value in ((heads_name, state.num_heads), ("conv_dim", conv_dim)):
        if value % tp_size:
            raise ValueError(uneven_state(tp_size, what, value))
    heads, groups = state.num_heads // tp_size, state.n_groups // tp_size
    conv = element_bytes(dtype, conv_dim // tp_size * (state.d_conv - 1))
    ssm = element_bytes(state.ssm_dtype or dtype, heads * state.head_dim * state.d_state)
    step = element_bytes(dtype, heads * state.head_dim + groups * state.d_state)
    return RecurrentState(conv, ssm, step, 2 * heads * 4)


def mamba_fields(kind: LayerKind, dtype: str) -> dict[str, Any]:
    """A recurrent kind's state dimensions (§8) as the generated tables' fields (the sizing
    ``Kind`` and the shim's ``LayerKind`` name them alike); none for the raw ``state_bytes``.
    ``dtype`` is the pool's; the SSM state keeps its own dtype when the spec gives one."""
    state = kind.recurrent_dims  # a mamba1: kind in Mamba-2 dimensions
    if state is None:
        return {}
    return {
        "ssm_heads": state.num_heads,
        "ssm_head_dim": state.head_dim,
        "d_state": state.d_state,
        "n_groups": state.n_groups,
        "d_conv": state.d_conv,
        "ssm_dtype": state.ssm_dtype or kind.dtype or dtype,
    }
