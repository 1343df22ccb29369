"""The interpreter's rows of a loaded spec (``kvgen.sizing.sizing_kinds``' row types): its layer
kinds, stacks and speculative profiles, as generation writes them into ``TABLES`` and as kvgen binds
them in memory (``kvgen._generate.sizing_context``), and as the engine rows are derived from
(``kvgen.sizing.engines_rows.engine_rows``: each layer of a family is written once, here).

A kind's row keeps what the spec says of it, resolved: heads and head sizes (a missing head
dim derived from the model's hidden size), the pool dtype, a window or chunk, a recurrent
state's dimensions in Mamba-2 form with the form it was given in, an MLA latent's ranks.
"""

from __future__ import annotations

from typing import TypedDict

from kvgen._model.cache_kinds import spec_kind
from kvgen._model.geometry import kind_head_dim, kind_v_head_dim
from kvgen._model.recurrent import mamba_fields
from kvgen._spec.models import LayerKind, LayerStack, Speculative
from kvgen.sizing.facts import mode_headroom
from kvgen.sizing.sizing_kinds import Kind, Profile, Stack

__all__ = ["kind_row", "profile_row", "stack_row"]


class _StateForm(TypedDict, total=False):
    state_form: str


class _Latent(TypedDict, total=False):
    kv_lora_rank: int
    qk_rope_head_dim: int
    index_head_dim: int


def _state_form(kind: LayerKind) -> _StateForm:
    """The form a recurrent state was written in, where it is not Mamba-2 (the default)."""
    if kind.mamba1 is not None:
        return {"state_form": "mamba1"}
    if kind.linear is not None:
        return {"state_form": "linear"}
    return {}


def kind_row(
    kind_name: str, stack: LayerStack, layers: int, dtype: str, shape_of: LayerStack
) -> Kind:
    """One layer kind: standard attention keeps heads and dtype (tensor parallelism divides
    the heads at call time); an MLA latent keeps its ranks (the interpreter derives its bytes
    per token); a spec's raw shape keeps its bytes per token."""
    kind = stack.layer_kinds[kind_name]
    cls = spec_kind(kind)
    dtype = kind.dtype or stack.kv_cache_dtype or dtype
    kv_heads = head_dim = v_head_dim = fixed = 0
    mla: _Latent = {}
    if kind.kv_lora_rank is not None:
        mla = {"kv_lora_rank": kind.kv_lora_rank,
               "qk_rope_head_dim": kind.qk_rope_head_dim or 0}  # fmt: skip
    if kind.index_head_dim is not None:
        mla["index_head_dim"] = kind.index_head_dim
    if cls.cached_heads:
        if kind.bytes_per_token is not None:
            fixed = kind.bytes_per_token
            mla = {}  # the raw shape stands for the whole layer
        elif kind.kv_lora_rank is None:
            kv_heads = kind.kv_heads or 0
            head_dim = kind_head_dim(kind, shape_of)
            if kind.v_head_dim is not None:  # 0 in the row: V's head size is K's
                v_head_dim = kind_v_head_dim(kind, shape_of)
    cached = cls.cached_heads or kind.recurrent_dims is not None or cls.recurrent
    return Kind(
        kind.attention,
        layers=layers,
        window=cls.window(kind),
        sink_tokens=kind.sink_tokens,
        kv_heads=kv_heads,
        head_dim=head_dim,
        dtype=dtype if cached else "",
        bytes_per_token=fixed,
        extra_bytes_per_token=kind.extra_bytes_per_token,
        state_bytes=kind.state_bytes or 0,
        **mamba_fields(kind, dtype),
        reads=kind.reads,
        **cls.encoder_fields(kind),
        chunk=cls.chunk(kind),
        v_head_dim=v_head_dim,
        **_state_form(kind),
        **mla,
    )


def stack_row(stack: LayerStack, dtype: str, shape_of: LayerStack) -> Stack:
    """The pattern as written and one row per kind it uses, sorted, with its layer count:
    O(pattern + kinds) time and text."""
    pattern = tuple(stack.layers.pattern)
    laps, rest = divmod(stack.layers.count, len(pattern))
    counts: dict[str, int] = {}
    for i, name in enumerate(pattern):
        counts[name] = counts.get(name, 0) + laps + (i < rest)
    kinds = {name: kind_row(name, stack, counts[name], dtype, shape_of) for name in sorted(counts)}
    return Stack(stack.layers.count, pattern, kinds)


def profile_row(profile: Speculative | None, draft: Stack | None) -> Profile:
    """Headroom terms of §2 and §5 without the opt-in overlap slack (added at call time)."""
    if profile is None:
        return Profile("none", draft_len=0, extra=0, step=1, backoff=0)
    extra, slots, backoff = mode_headroom(
        profile.mode, profile.max_draft_len, profile.tree_draft_tokens
    )
    # A generation step adds 1 + draft slots tokens: G (§2).
    return Profile(profile.mode, profile.max_draft_len, extra, slots + 1, backoff, draft)
