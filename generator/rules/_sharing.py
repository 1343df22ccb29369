"""The layer kinds that read another layer's cache (KV sharing, ``reads:``), as the
``shared-*`` lint rules see them: each reading kind, its first layer and the layer it reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from kvgen.rules._base import Kind, RuleContext, placed_kinds

__all__ = ["Reader", "readers"]


class Reader(NamedTuple):
    """A kind with ``reads``: its first layer, and the read layer's kind (None: no such layer,
    or a layer whose kind is undefined, which KV205 reports)."""

    kind: Kind
    reads: int
    first: int  # index of the kind's first layer in the stack
    target: Kind | None


def readers(ctx: RuleContext) -> Iterator[Reader]:
    kinds = {(id(k.stack), k.name): k for k in ctx.kinds}
    for kind in ctx.kinds:
        reads = kind.kind.reads
        placed = placed_kinds(kind.stack.stack)
        if reads is None or kind.name not in placed:
            continue  # an unplaced kind is KV206's finding
        pattern = kind.stack.stack.layers.pattern
        target = None
        if reads < kind.stack.stack.layers.count:
            target = kinds.get((id(kind.stack), pattern[reads % len(pattern)]))
        yield Reader(kind, reads, placed.index(kind.name), target)
