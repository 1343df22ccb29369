"""Cross-attention kinds of one cache manager with different encoder token counts.

## What it does
Reports a cross-attention kind whose `encoder_tokens` differs from that of an earlier
cross-attention kind held by the same cache manager: a model's layers together with the extra
draft layers of each profile that applies to it, or one separate draft pool.

## Why it matters
A request has one encoder output, and every cross-attention layer attends to all of it: the
engines allocate one cross-attention block table per request (vLLM's CrossAttentionManager,
TensorRT-LLM's cross KV cache manager), `ceil(encoder_tokens / tpb)` pages on every cross
layer (docs/cost-model.md §4). Two counts in one manager describe no real model, and the
runtime keyword `encoder_tokens=` could not replace both.

## Example
```yaml
layer_kinds:
  early: {attention: cross, kv_heads: 8, head_dim: 128, encoder_tokens: 6404}
  late: {attention: cross, kv_heads: 8, head_dim: 128, encoder_tokens: 1601}
```

## Fix
Give every cross-attention kind the encoder's token count:
```yaml
  late: {attention: cross, kv_heads: 8, head_dim: 128, encoder_tokens: 6404}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, PlacedKind, RuleContext, placed_kinds

CODE = "KV232"
NAME = "cross-kinds-disagree"
SEVERITY = "error"


def _cross_kinds(ctx: RuleContext) -> dict[int, list[PlacedKind]]:
    """The placed cross kinds of every stack (by ``id``), from one pass over the kinds."""
    placed = {id(stack): set(placed_kinds(stack.stack)) for stack in ctx.stacks}
    found: dict[int, list[PlacedKind]] = {id(stack): [] for stack in ctx.stacks}
    for kind in ctx.kinds:
        if (
            kind.name in placed[id(kind.stack)]
            and kind.kind.attention == "cross"
            and kind.kind.encoder_tokens is not None
        ):
            found[id(kind.stack)].append(kind)
    return found


def _managers(ctx: RuleContext) -> Iterator[list[PlacedKind]]:
    """The cross kinds of each cache manager, the model's own first (linear in the model-profile
    pairs: each profile's extra layers are looked up, never searched for)."""
    cross = _cross_kinds(ctx)
    extra = {
        stack.loc[1]: cross[id(stack)]
        for stack in ctx.stacks
        if stack.loc[0] == "speculative" and stack.loc[-1] == "extra_layers"
    }
    profiles = ctx.family.speculative
    # Keyed as a location's profile index (``Loc``: its parts are names and indices).
    members: dict[str | int, set[str] | None] = {
        i: None if p.models is None else set(p.models) for i, p in enumerate(profiles)
    }
    for stack in ctx.stacks:
        if stack.model is not None:
            kinds = list(cross[id(stack)])
            for i, found in extra.items():
                names = members[i]  # Speculative.applies_to, on a set
                if names is None or stack.model.name in names:
                    kinds += found
            yield kinds
        elif stack.loc[-1] == "draft":
            yield cross[id(stack)]


def check(ctx: RuleContext) -> Iterator[Finding]:
    reported: set[tuple[object, ...]] = set()
    for kinds in _managers(ctx):
        if not kinds:
            continue
        first = kinds[0]
        for kind in kinds[1:]:
            if kind.kind.encoder_tokens == first.kind.encoder_tokens or kind.loc in reported:
                continue
            reported.add(kind.loc)
            yield Finding(
                (*kind.loc, "encoder_tokens"),
                f"{kind.label} caches {kind.kind.encoder_tokens} encoder tokens but "
                f"{first.label} caches {first.kind.encoder_tokens}; one request has one "
                "encoder output",
                f"give every cross-attention kind of this cache manager "
                f"encoder_tokens: {first.kind.encoder_tokens}",
            )
