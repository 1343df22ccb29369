"""What a lint rule sees (``RuleContext``) and what it reports (``Finding``).

A rule module defines ``CODE``, ``NAME``, ``SEVERITY`` and ``check(ctx) -> Iterator[Finding]``;
its docstring (summary line, then What it does / Why it matters / Example / Fix) is the rule's
documentation for ``kvgen explain``, ``kvgen lint --list-rules`` and SARIF.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from kvgen._spec.models import Family, LayerKind, LayerStack, Model
from kvgen._util.diagnostics import Loc

__all__ = [
    "Finding",
    "Loc",
    "PlacedKind",
    "PlacedStack",
    "RuleContext",
    "derived_head_dim",
    "placed_kinds",
]


@dataclass(frozen=True)
class Finding:
    """One problem at ``loc`` (a path into the spec); ``at="key"`` anchors on the key instead."""

    loc: Loc
    message: str
    fix: str = ""
    at: Literal["value", "key"] = "value"


@dataclass(frozen=True)
class PlacedStack:
    """One layer stack of the family: a model, a separate draft pool, or extra draft layers."""

    loc: Loc
    stack: LayerStack
    label: str
    dtype: str
    max_seq_len: int
    model: Model | None
    is_draft: bool


@dataclass(frozen=True)
class PlacedKind:
    """One layer kind of one stack, with its location and effective cache dtype."""

    stack: PlacedStack
    name: str
    kind: LayerKind
    loc: Loc

    @property
    def dtype(self) -> str:
        return self.kind.dtype or self.stack.dtype

    @property
    def label(self) -> str:
        return f"layer kind '{self.name}' of {self.stack.label}"


class RuleContext:
    """A validated family, flattened into the views that rules iterate over."""

    def __init__(self, family: Family):
        self.family = family
        self.stacks = tuple(_stacks(family))
        self.kinds = tuple(
            PlacedKind(stack, name, kind, (*stack.loc, "layer_kinds", name))
            for stack in self.stacks
            for name, kind in stack.stack.layer_kinds.items()
        )


def _stacks(family: Family) -> Iterator[PlacedStack]:
    for i, model in enumerate(family.models):
        dtype = model.kv_cache_dtype or family.kv_cache_dtype
        loc = ("models", i)
        yield PlacedStack(
            loc, model, f"model '{model.name}'", dtype, model.max_seq_len, model, False
        )
    # A draft sees the longest sequence of the models its profile applies to (every model
    # when the profile names none, or none of the names is known).
    by_name: dict[str, int] = {}  # the longest of each name (a name twice is KV213)
    for model in family.models:
        by_name[model.name] = max(by_name.get(model.name, 0), model.max_seq_len)
    everyone = max(by_name.values())
    for i, profile in enumerate(family.speculative):
        named = [by_name[n] for n in set(profile.models or ()) if n in by_name]
        longest = everyone if profile.models is None else max(named or [everyone])
        for part in ("draft", "extra_layers"):
            stack = getattr(profile, part)
            if stack is None:
                continue
            dtype = stack.kv_cache_dtype or family.kv_cache_dtype
            label = f"{part.replace('_', ' ')} of profile '{profile.name}'"
            yield PlacedStack(("speculative", i, part), stack, label, dtype, longest, None, True)


def derived_head_dim(kind: PlacedKind) -> int | None:
    """``head_dim`` as given, else ``hidden_size / num_attention_heads`` of the model, if exact."""
    if kind.kind.head_dim is not None:
        return kind.kind.head_dim
    model = kind.stack.model
    if model is None or not model.hidden_size or not model.num_attention_heads:
        return None
    heads, rest = divmod(model.hidden_size, model.num_attention_heads)
    return heads if rest == 0 else None


def placed_kinds(stack: LayerStack) -> list[str]:
    """The pattern entries that land on at least one layer (the first ``count`` of them)."""
    return stack.layers.pattern[: stack.layers.count]
