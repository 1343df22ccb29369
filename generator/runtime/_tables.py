"""The tables a generated allocator hands the runtime: its family's layer shapes, as data.

Shapes only (heads, head_dim, dtype, window, ...): no page count, headroom or cost term. The
runtime derives every size from them itself (docs/cost-model.md §1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kvgen.runtime._kinds import LAYER_RULES, LayerKind, layer_rule

__all__ = ["FamilyTables", "LayerKind", "LayerStack", "ModelTable", "SpeculativeProfile"]

ATTENTIONS = tuple(LAYER_RULES)  # the attentions the runtime has a layer rule for
DTYPES = (
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "nvfp4",
    "fp8_per_token_head",
    "int8_per_token_head",
    "mxfp8",
    "mxfp4",
    "fp8_ds_mla",
)


@dataclass(frozen=True)
class LayerStack:
    """``count`` layers whose kinds repeat ``pattern`` cyclically."""

    count: int
    pattern: tuple[str, ...]
    kinds: Mapping[str, LayerKind]


class ModelTable(NamedTuple):
    """One model of the family: its native context, its layers, the profiles that apply."""

    max_seq_len: int
    stack: LayerStack
    profiles: tuple[str, ...] = ("none",)


class SpeculativeProfile(NamedTuple):
    """A named speculative profile: mode, K = max_draft_len, tree draft tokens (or None)."""

    mode: str
    max_draft_len: int = 0
    tree_draft_tokens: int | None = None


NO_SPECULATION = SpeculativeProfile("none")


def _empty_extra() -> dict[tuple[str, str], LayerStack]:
    return {}


def _empty_drafts() -> dict[str, LayerStack]:
    return {}


@dataclass(frozen=True)
class FamilyTables:
    """Everything family-specific the runtime needs.

    ``extra_layers[(model, profile)]``: draft layers the target's cache manager holds (EAGLE3 /
    MTP one-model). ``drafts[profile]``: the layers of a separate draft pool (PARD, DFlash,
    draft-target one-model). The profile "none" always exists.
    """

    family: str
    tokens_per_block: int
    models: Mapping[str, ModelTable]
    profiles: Mapping[str, SpeculativeProfile] = field(default_factory=dict)
    extra_layers: Mapping[tuple[str, str], LayerStack] = field(default_factory=_empty_extra)
    drafts: Mapping[str, LayerStack] = field(default_factory=_empty_drafts)

    def __post_init__(self) -> None:
        tpb = self.tokens_per_block
        if type(tpb) is not int or tpb < 1 or tpb & (tpb - 1):
            raise ValueError(f"tokens_per_block must be a power of two, got {tpb!r}")
        if not self.models:
            raise ValueError(f"family {self.family!r} has no model")
        if "none" not in self.profiles:
            object.__setattr__(self, "profiles", {"none": NO_SPECULATION, **self.profiles})
        stacks = [(f"model {name!r}", m.stack) for name, m in self.models.items()]
        stacks += [(f"extra layers {key!r}", s) for key, s in self.extra_layers.items()]
        stacks += [(f"draft {name!r}", s) for name, s in self.drafts.items()]
        for where, stack in stacks:
            _check_stack(where, stack)
        for name, model in self.models.items():
            unknown = [p for p in model.profiles if p not in self.profiles]
            if unknown:
                raise ValueError(f"model {name!r} names unknown profiles {unknown}")

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(self.models)

    @property
    def profile_names(self) -> tuple[str, ...]:
        return tuple(self.profiles)


def _check_stack(where: str, stack: LayerStack) -> None:
    if stack.count < 1 or not stack.pattern:
        raise ValueError(f"{where}: a layer stack needs count >= 1 and a non-empty pattern")
    for name in stack.pattern:
        kind = stack.kinds.get(name)
        if kind is None:
            raise ValueError(f"{where}: pattern names unknown layer kind {name!r}")
        if kind.attention not in ATTENTIONS or kind.dtype not in DTYPES:
            raise ValueError(f"{where}: layer kind {name!r} has an unknown attention or dtype")
    for name, kind in stack.kinds.items():
        if kind.reads is not None and name in stack.pattern:
            _check_shared(where, stack, name, kind)


def _check_shared(where: str, stack: LayerStack, name: str, kind: LayerKind) -> None:
    """A kind that reads another layer's cache: that layer exists, comes before every layer
    of the kind, holds its own cache, and has the same shape (so its views serve both)."""
    reads = kind.reads
    assert reads is not None
    period = len(stack.pattern)
    first = min(i for i, entry in enumerate(stack.pattern) if entry == name)
    target = stack.kinds[stack.pattern[reads % period]] if 0 <= reads < stack.count else None
    problem = ""
    if target is None:
        problem = f"does not exist (count {stack.count})"
    elif reads >= first:
        problem = f"is not before layer {first}, the kind's first layer"
    elif target.reads is not None or not layer_rule(target).readable:
        problem = "holds no attention cache of its own"
    elif target != kind._replace(reads=None):
        problem = f"has another shape ({target})"
    if problem:
        raise ValueError(f"{where}: layer kind {name!r} reads layer {reads}, which {problem}")
