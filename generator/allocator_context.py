"""Template context of ``generated/<family>/allocator.py``: the family's layer shapes as data.

The allocator shim derives every size itself from these shapes (heads, head_dim, dtype,
window, ...). It deliberately receives no folded cost term, headroom or page count from the
generator: the diff suite compares the shim's runtime bytes against the static sizing module,
and that comparison only means something if the two are computed independently. No torch here.
"""

from __future__ import annotations

from typing import Any

from kvgen.costmodel import kind_head_dim
from kvgen.render_input import SpecInput, artifact
from kvgen.spec import MODES_WITH_DRAFT_POOL, LayerKind, LayerStack


def layer_kind_fields(kind: LayerKind, dtype: str, shape_of: LayerStack) -> dict[str, Any]:
    """Keyword fields of the generated ``LayerKind`` (absent shapes are 0, dtype resolved)."""
    standard = kind.attention not in ("recurrent", "none") and kind.kv_heads is not None
    return {
        "attention": kind.attention,
        "window": kind.window if kind.attention == "sliding" else None,
        "sink_tokens": kind.sink_tokens if kind.attention == "sliding" else 0,
        "kv_heads": kind.kv_heads if standard else 0,
        "head_dim": kind_head_dim(kind, shape_of) if standard else 0,
        "kv_lora_rank": kind.kv_lora_rank or 0,
        "qk_rope_head_dim": kind.qk_rope_head_dim or 0,
        "bytes_per_token": kind.bytes_per_token or 0,
        "extra_bytes_per_token": kind.extra_bytes_per_token,
        "state_bytes": kind.state_bytes or 0,
        "dtype": kind.dtype or dtype,
    }


def stack_fields(stack: LayerStack, family_dtype: str, shape_of: LayerStack) -> dict[str, Any]:
    """``count``, cyclic ``pattern`` and the ``kinds`` it names (sorted), dtypes resolved."""
    dtype = stack.kv_cache_dtype or family_dtype
    names = sorted(set(stack.layers.pattern))
    return {
        "count": stack.layers.count,
        "pattern": tuple(stack.layers.pattern),
        "kinds": {
            name: layer_kind_fields(stack.layer_kinds[name], dtype, shape_of) for name in names
        },
    }


@artifact("allocator.py", "allocator.py.j2")
def allocator_context(spec: SpecInput) -> dict[str, Any]:
    family = spec.family
    dtype = family.kv_cache_dtype
    models = {
        model.name: {
            "max_seq_len": model.max_seq_len,
            "stack": stack_fields(model, dtype, model),
            "profiles": family.profiles_for(model.name),
        }
        for model in family.models
    }
    extra_layers = {
        (model.name, profile.name): stack_fields(profile.extra_layers, dtype, model)
        for model in family.models
        for profile in family.speculative
        if profile.extra_layers is not None and profile.applies_to(model.name)
    }
    profiles = {"none": ("none", 0, None)}
    drafts = {}
    for profile in family.speculative:
        profiles[profile.name] = (profile.mode, profile.max_draft_len, profile.tree_draft_tokens)
        if profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is not None:
            drafts[profile.name] = stack_fields(profile.draft, dtype, profile.draft)
    return {
        "models": models,
        "profiles": profiles,
        "extra_layers": extra_layers,
        "drafts": drafts,
    }
