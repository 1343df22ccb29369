"""The layer kinds that read another layer's cache (KV sharing, ``reads:``), as the
``shared-*`` lint rules see them: each reading kind, its first layer and the layer it reads.

Every kind the pattern names counts, also one past ``count`` that lands on no layer (KV221
warns about it): the generated allocator checks the ``reads`` of every kind in its pattern
when it is imported, so lint must refuse whatever that check refuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from kvgen._lint.rules._base import PlacedKind, RuleContext

__all__ = ["Reader", "readers"]


class Reader(NamedTuple):
    """A kind with ``reads``: its first layer, and the read layer's kind (None: no such layer,
    or a layer whose kind is undefined, which KV205 reports)."""

    kind: PlacedKind
    reads: int
    first: int  # index of the kind's first pattern entry (its first layer, when placed)
    target: PlacedKind | None


def readers(ctx: RuleContext) -> Iterator[Reader]:
    kinds = {(id(k.stack), k.name): k for k in ctx.kinds}
    for kind in ctx.kinds:
        reads = kind.kind.reads
        pattern = kind.stack.stack.layers.pattern
        if reads is None or kind.name not in pattern:
            continue  # a kind outside the pattern is KV206's finding, and reads nothing
        target = None
        if reads < kind.stack.stack.layers.count:
            target = kinds.get((id(kind.stack), pattern[reads % len(pattern)]))
        yield Reader(kind, reads, pattern.index(kind.name), target)
