"""Template context of ``generated/<family>/sizing.py``: the family folded into tables.

Per-layer facts are aggregated per layer kind, with the pattern's prefix counts, so that the
generated module answers for any pipeline rank in time independent of the layer count.
"""

from __future__ import annotations

from typing import Any

from kvgen.costmodel import element_bytes, headroom, kind_head_dim
from kvgen.render_input import SpecInput, artifact
from kvgen.spec import MODES_WITH_DRAFT_POOL, LayerStack, Speculative

ATTENTION_CODES = {"full": 0, "sliding": 1, "recurrent": 2, "none": 3}


def kind_row(kind_name: str, stack: LayerStack, dtype: str, shape_of: LayerStack) -> tuple:
    """``(name, attention, window, sinks, kv_heads, head_dim, dtype, fixed_bpt, extra, state)``.

    ``fixed_bpt`` is the per-token size of shapes that tensor parallelism does not split
    (MLA, raw bytes); standard attention is computed at call time from kv_heads and tp.
    """
    kind = stack.layer_kinds[kind_name]
    dtype = kind.dtype or stack.kv_cache_dtype or dtype
    kv_heads = head_dim = fixed = 0
    if kind.attention not in ("recurrent", "none"):
        if kind.bytes_per_token is not None:
            fixed = kind.bytes_per_token
        elif kind.kv_lora_rank is not None:
            fixed = element_bytes(dtype, kind.kv_lora_rank + (kind.qk_rope_head_dim or 0))
        else:
            kv_heads = kind.kv_heads or 0
            head_dim = kind_head_dim(kind, shape_of)
    window = kind.window if kind.attention == "sliding" else None
    return (
        kind_name,
        kind.attention,
        window,
        kind.sink_tokens,
        kv_heads,
        head_dim,
        dtype,
        fixed,
        kind.extra_bytes_per_token,
        kind.state_bytes or 0,
    )


def stack_row(stack: LayerStack, dtype: str, shape_of: LayerStack) -> tuple:
    """``(count, kinds, pattern, prefix)``: kinds in sorted order, pattern as kind indices,
    and prefix[k][i] = occurrences of kind k in pattern[:i]."""
    names = sorted(set(stack.layers.pattern))
    index = {name: i for i, name in enumerate(names)}
    pattern = tuple(index[name] for name in stack.layers.pattern)
    prefix = tuple(
        tuple(sum(1 for p in pattern[:i] if p == k) for i in range(len(pattern) + 1))
        for k in range(len(names))
    )
    kinds = tuple(kind_row(name, stack, dtype, shape_of) for name in names)
    return (stack.layers.count, kinds, pattern, prefix)


def profile_row(profile: Speculative | None) -> dict[str, Any]:
    """Headroom terms of SIZING §2 without the opt-in overlap slack (added at call time)."""
    head = headroom(profile)
    if profile is None:
        return {"mode": "none", "draft_len": 0, "extra": 0, "step": 1, "backoff": 0}
    return {
        "mode": profile.mode,
        "draft_len": profile.max_draft_len,
        "extra": head.extra,
        "step": head.step,
        "backoff": head.backoff,
    }


@artifact("sizing.py", "sizing.py.j2")
def sizing_context(spec: SpecInput) -> dict[str, Any]:
    family = spec.family
    dtype = family.kv_cache_dtype
    models = {
        model.name: {
            "max_seq_len": model.max_seq_len,
            "target": stack_row(model, dtype, model),
            "extra_layers": {
                profile.name: stack_row(profile.extra_layers, dtype, model)
                for profile in family.speculative
                if profile.extra_layers is not None and profile.applies_to(model.name)
            },
            "profiles": family.profiles_for(model.name),
        }
        for model in family.models
    }
    profiles = {"none": profile_row(None)}
    drafts = {}
    for profile in family.speculative:
        profiles[profile.name] = profile_row(profile)
        if profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is not None:
            drafts[profile.name] = stack_row(profile.draft, dtype, profile.draft)
    return {
        "models": models,
        "profiles": profiles,
        "drafts": drafts,
    }
