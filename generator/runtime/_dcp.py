"""Decode context parallelism in the shim (docs/cost-model.md §9): the rank a token lives on.

With ``dcp_size`` d and interleave I (vLLM ``cp_kv_cache_interleave_size``), token t of a
request lives on DCP rank ``(t // I) % d``. A page of the block table spans ``tpb * d`` tokens
of the request (a "virtual block" of one page of tpb tokens on each rank); within it, a rank
keeps its tokens in order, I at a time. The shim's own derivation of the engines' slot
mapping (vLLM ``vllm/v1/worker/block_table.py``), written apart from the static cost model.
"""

from __future__ import annotations

from typing import NamedTuple

from kvgen.runtime._kinds import layer_rule
from kvgen.runtime._tables import FamilyTables, LayerStack
from kvgen.sizing import facts

__all__ = ["DecodeContextParallel", "check_dcp"]


class DecodeContextParallel(NamedTuple):
    """One rank of a DCP group: its size d, its rank and the interleave I."""

    size: int
    rank: int
    interleave: int

    def owner(self, position: int) -> int:
        """The DCP rank that holds token ``position`` of a request."""
        return (position // self.interleave) % self.size

    def local_tokens(self, capacity: int) -> int:
        """Tokens of positions [0, capacity) this rank holds: whole rounds of I * d tokens
        give I each; the rest is dealt I at a time from rank 0."""
        step = self.interleave * self.size
        rounds, rest = divmod(capacity, step)
        return rounds * self.interleave + min(
            max(rest - self.rank * self.interleave, 0), self.interleave
        )

    def slot(self, position: int, tokens_per_block: int) -> tuple[int, int] | None:
        """(block-table index, token offset in that rank's page) of ``position``, or None when
        another rank holds it."""
        span = tokens_per_block * self.size
        block, offset = divmod(position, span)
        if (offset // self.interleave) % self.size != self.rank:
            return None
        rounds, within = divmod(offset, self.interleave * self.size)
        return block, rounds * self.interleave + within % self.interleave


def check_dcp(
    tables: FamilyTables,
    stacks: tuple[LayerStack | None, ...],
    tp_size: int,
    attention_dp: bool,
    dcp: DecodeContextParallel,
) -> None:
    """ValueError where the engines refuse this DCP group (§9): carved from the TP group,
    sharding copies of the same KV heads, full attention only; and where the interleave does
    not tile a page (``tpb % I``, vLLM ``config/vllm.py``)."""
    d = dcp.size
    if tables.tokens_per_block % dcp.interleave:
        raise ValueError(
            f"dcp_interleave {dcp.interleave} must divide tokens_per_block "
            f"{tables.tokens_per_block}: a rank's page holds whole interleave groups"
        )
    if d == 1:
        return
    if attention_dp:
        raise ValueError(facts.dcp_with_attention_dp(d))
    if tp_size % d:
        raise ValueError(facts.dcp_outside_tp(tp_size, d))
    for stack in stacks:
        for name, kind in stack.kinds.items() if stack is not None else ():
            # DCP shards full attention and leaves recurrent state and cache-less layers whole;
            # the engines refuse it with any other attention (vLLM SlidingWindowSpec).
            if not layer_rule(kind).dcp_allowed():
                raise ValueError(facts.dcp_attention(d, name, kind.attention))
            heads = kind.kv_heads
            if heads and (tp_size <= heads or d > tp_size // heads):
                raise ValueError(facts.dcp_heads(d, name, heads, tp_size))
