"""Decode context parallelism (DCP) in the generic cost model (docs/cost-model.md §9).

With ``dcp_size`` d, the d TP ranks that would each hold a copy of the same KV heads hold every
d-th token of full-attention history instead (vLLM ``decode_context_parallel_size``; the token
to rank interleave is ``cp_kv_cache_interleave_size``). The engines' page unit becomes a page
of ``tpb`` tokens on each of the d ranks, so one page spans ``tpb * d`` tokens of a request and
every rank holds ``ceil(c / (tpb * d))`` pages for capacity ``c`` (vLLM
``single_type_kv_cache_manager.py`` multiplies the manager's block size by d). Sliding-window
(and every other non-full attention) caches are not sharded and the engines refuse them under
DCP (vLLM ``kv_cache_interface.py``: ``SlidingWindowSpec`` asserts ``DCP not support sliding
window``); recurrent state stays whole on every rank.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvgen._spec.models import MODES_WITH_DRAFT_POOL, LayerStack, Model, Speculative
from kvgen.sizing import facts
from kvgen.sizing.facts import DCP_ATTENTION

__all__ = ["SHARDED_ATTENTION", "check_dcp", "dcp_slope"]

# Attention kinds whose caches DCP leaves alone (recurrent: replicated; none: no cache) or
# shards (full); any other kind is refused under DCP rather than sized wrongly.
SHARDED_ATTENTION = DCP_ATTENTION


def _stacks(model: Model, profile: Speculative | None) -> Iterable[LayerStack]:
    yield model
    if profile is not None and profile.extra_layers is not None:
        yield profile.extra_layers
    if profile is not None and profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is not None:
        yield profile.draft


def check_dcp(
    model: Model, profile: Speculative | None, *, dcp: int, tp: int, attention_dp: bool
) -> None:
    """ValueError where the engines refuse ``dcp`` (dcp_size) for this model at ``tp``
    (tp_size) (§9): the DCP
    group is carved from the TP group (tp_size % dcp_size == 0, vLLM ``config/parallel.py``),
    it shards only copies of the same KV heads (tp_size > kv_heads and dcp_size <= tp_size //
    kv_heads, vLLM ``config/model.py``; MLA and raw-byte kinds have one latent copy per rank),
    attention-DP leaves no copies to shard, and only full attention is sharded."""
    if attention_dp:
        raise ValueError(facts.dcp_with_attention_dp(dcp))
    if tp % dcp:
        raise ValueError(facts.dcp_outside_tp(tp, dcp))
    for stack in _stacks(model, profile):
        for name, kind in stack.layer_kinds.items():
            if kind.attention not in SHARDED_ATTENTION:
                raise ValueError(facts.dcp_attention(dcp, name, kind.attention))
            heads = kind.kv_heads  # None for MLA and raw-byte shapes: one copy per rank
            if heads is not None and (tp <= heads or dcp > tp // heads):
                raise ValueError(facts.dcp_heads(dcp, name, heads, tp))


def dcp_slope(manager: str, slope: int, dcp: int) -> int:
    """Bytes per token of full-attention history on one rank, from ``slope`` on all of them:
    each of the ``dcp`` ranks holds one token in ``dcp`` (§9); ValueError where that is not a
    whole number of bytes."""
    if slope % dcp:
        raise ValueError(
            f"{manager}: the {slope} bytes per token of full attention on this rank do not "
            f"divide by dcp_size {dcp}; the affine cost needs whole bytes per token of history"
        )
    return slope // dcp
